"""Fixtures for the notes integration tests: a NoteService with small, known limits."""

from __future__ import annotations

import pytest

from fortemi.platform.database import Database
from fortemi.platform.notes import NoteService
from tests.integration.notes.helpers import MAX_NOTE_BYTES, MAX_PAGE_SIZE, MAX_UPSERT_BATCH


@pytest.fixture(scope="session")
def notes(db: Database) -> NoteService:
    return NoteService(
        db,
        max_note_bytes=MAX_NOTE_BYTES,
        max_page_size=MAX_PAGE_SIZE,
        max_upsert_batch=MAX_UPSERT_BATCH,
    )
