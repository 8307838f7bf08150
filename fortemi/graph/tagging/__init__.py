"""Concept tagging: the ``ConceptTagging`` job's tiers (keyphrases and vocabulary on the
CPU, then the generation models) and ``RelatedConceptInference``."""
