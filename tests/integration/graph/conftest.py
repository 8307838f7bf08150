"""Fixtures for the graph integration tests: a vocabulary service and a note service whose
indexer maps path tags to concepts."""

from __future__ import annotations

import pytest

from fortemi.graph.vocabulary import VocabularyService
from fortemi.graph.vocabulary.indexer import PathTagIndexer
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteService


@pytest.fixture(scope="session")
def vocabulary(db: Database) -> VocabularyService:
    return VocabularyService(db)


@pytest.fixture(scope="session")
def tagged_notes(db: Database, vocabulary: VocabularyService) -> NoteService:
    return NoteService(
        db,
        max_note_bytes=100_000,
        max_page_size=100,
        max_upsert_batch=100,
        indexers=[PathTagIndexer(vocabulary)],
    )
