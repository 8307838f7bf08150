"""The vocabulary's GraphQL: schemes, concepts, collections, note concepts, health, SKOS."""

from fortemi.graphql.vocabulary.resolvers import VocabularyMutation, VocabularyQuery

__all__ = ["VocabularyMutation", "VocabularyQuery"]
