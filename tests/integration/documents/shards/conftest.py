"""Fixtures for shard tests: the shard service, the note service, and a second memory
to import into."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator

import pytest

from fortemi.documents.shards import ShardService
from fortemi.platform.database import Database
from fortemi.platform.memories import MemoryService
from fortemi.platform.notes import NoteService
from fortemi.retrieval.sets import EmbeddingSets

_names = itertools.count()


@pytest.fixture
def shards(db: Database) -> ShardService:
    # As the composition root builds it: imported embedding sets get their indexes.
    return ShardService(db, producer="fortemi-test", after_import=[EmbeddingSets().index_all])


@pytest.fixture
def notes(db: Database) -> NoteService:
    return NoteService(db, max_note_bytes=1_048_576, max_page_size=100, max_upsert_batch=500)


@pytest.fixture
async def target(memory_service: MemoryService) -> AsyncIterator[str]:
    """A second fresh memory, the one shards are imported into."""
    name = f"s{os.getpid()}_{next(_names)}"
    await memory_service.create(name, created_by="test")
    yield name
    await memory_service.delete(name, confirm=name)
