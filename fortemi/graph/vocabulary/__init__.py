"""The memory's SKOS vocabulary: schemes, concepts, relations, collections, note concepts."""

from fortemi.graph.vocabulary.models import ConceptProposal, LabelEntry, NoteConcept
from fortemi.graph.vocabulary.service import VocabularyService

__all__ = ["ConceptProposal", "LabelEntry", "NoteConcept", "VocabularyService"]
