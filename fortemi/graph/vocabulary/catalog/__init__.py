"""Vocabulary governance: schemes, concepts, labels, relations and collections."""
