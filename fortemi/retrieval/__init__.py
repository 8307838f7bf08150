"""Retrieval: turning notes into searchable pieces and finding them again."""
