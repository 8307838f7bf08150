"""Fixtures for the link tests: notes written through a note service whose indexer keeps
wiki links, and the link service reading them, on the session's real PostgreSQL."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

import pytest

from fortemi.graph.links import LinkService, WikiLinkIndexer
from fortemi.graph.links.models import NoteLinks
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteDraft, NoteService, NoteVisibility

Write = Callable[..., Awaitable[UUID]]
Links = Callable[..., Awaitable[NoteLinks]]


@pytest.fixture(scope="session")
def notes(db: Database) -> NoteService:
    return NoteService(
        db,
        max_note_bytes=1_048_576,
        max_page_size=100,
        max_upsert_batch=500,
        indexers=[WikiLinkIndexer(None)],
    )


@pytest.fixture(scope="session")
def link_service(db: Database) -> LinkService:
    return LinkService(db, max_links=1000)


@pytest.fixture
def write(notes: NoteService, memory: str) -> Write:
    async def create(title: str = "", content: str = "", **fields: Any) -> UUID:
        note = await notes.create(
            memory, NoteDraft(title=title, content=content, **fields), actor="test"
        )
        return note.id

    return create


@pytest.fixture
def links(link_service: LinkService, memory: str) -> Links:
    async def read(note_id: UUID, visibility: NoteVisibility | None = None) -> NoteLinks:
        return await link_service.links(memory, note_id, visibility=visibility)

    return read
