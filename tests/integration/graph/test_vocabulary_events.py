"""Vocabulary changes are announced after they commit: note.concepts_changed for tagging,
graph.vocabulary_changed for governance; a refused change announces nothing."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis

from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.errors import BadUserInput
from fortemi.platform.events import Event, EventBus
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes import NoteDraft, NoteService


@pytest.fixture
async def bus(service_urls: ServiceUrls) -> AsyncIterator[EventBus]:
    client = redis.Redis.from_url(service_urls.redis)
    yield EventBus(client, stream=f"test:events:{uuid.uuid4().hex}", block_ms=100)
    await client.aclose()


async def _take(bus: EventBus, after: str, n: int) -> list[Event]:
    events: list[Event] = []
    stream = bus.subscribe(after=after)
    try:
        async for event in stream:
            events.append(event)
            if len(events) == n:
                break
    finally:
        await stream.aclose()
    return events


def _marker(name: str) -> Event:
    return Event(type="test.marker", entity_type="test", entity_id=name)


async def test_tagging_and_governance_are_announced_after_commit_and_refusals_are_not(
    db: Database, bus: EventBus, tagged_notes: NoteService, memory: str
) -> None:
    service = VocabularyService(db, events=bus)
    note = await tagged_notes.create(memory, NoteDraft(title="n", project="p"), actor="a")
    start = await bus.publish(_marker("start"))

    await service.tag_note(
        memory, note.id, [ConceptProposal(("a", "b"), "topic", 0.5, 0.5)], source="ai_auto",
        actor=None,
    )  # fmt: skip
    with pytest.raises(BadUserInput):
        await service.tag_note(
            memory, note.id, [ConceptProposal(tuple("abcdef"), None, 1, 1)], source="api",
            actor="a",
        )  # fmt: skip
    scheme = await service.catalog.create_scheme(memory, title="S", actor="admin")
    await bus.publish(_marker("end"))

    tagged, governed, end = await _take(bus, start, 3)
    assert tagged.type == "note.concepts_changed"
    assert tagged.entity_id == to_global_id("Note", note.id)
    assert tagged.payload["source"] == "ai_auto"
    assert tagged.payload["project"] == "p"  # subscribers' read scope filters on it
    assert len(tagged.payload["created"]) == 2
    assert governed.type == "graph.vocabulary_changed"
    assert governed.payload == {"action": "scheme_created", "id": str(scheme.id)}
    assert end.entity_id == "end"
