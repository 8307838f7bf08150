"""Concurrent updates of one note: serialised, never lost, stale versions refused.

Each test holds the note's row lock while it starts two updates, waits until both are
queued behind it, then lets go: the two updates then race every run, not by chance.
"""

from __future__ import annotations

import asyncio

from fortemi.platform.database import Database
from fortemi.platform.errors import Conflict
from fortemi.platform.notes import Note, NoteDraft, NotePatch, NoteService
from tests.integration.notes.helpers import wait_for_lock_waiters


async def _race(
    db: Database, notes: NoteService, memory: str, note: Note, *patches: NotePatch
) -> list[Note | BaseException]:
    async with db.memory_transaction(memory) as conn:
        await conn.execute("SELECT 1 FROM note WHERE id = $1 FOR UPDATE", note.id)
        tasks = [
            asyncio.create_task(notes.update(memory, note.id, patch, actor=None))
            for patch in patches
        ]
        await wait_for_lock_waiters(db, len(patches))
    return await asyncio.gather(*tasks, return_exceptions=True)


async def test_concurrent_updates_with_the_same_expected_version_let_exactly_one_win(
    notes: NoteService, memory: str, db: Database
) -> None:
    note = await notes.create(memory, NoteDraft(content="base"), actor=None)
    results = await _race(
        db,
        notes,
        memory,
        note,
        NotePatch(content="from A", expected_version=1),
        NotePatch(content="from B", expected_version=1),
    )

    winners = [r for r in results if isinstance(r, Note)]
    losers = [r for r in results if isinstance(r, Conflict)]
    assert (len(winners), len(losers)) == (1, 1)
    assert losers[0].extensions["current_version"] == 2
    current = await notes.get(memory, note.id)
    assert current == winners[0]
    assert current is not None
    assert current.version == 2
    assert [v.version for v in await notes.versions(memory, note.id)] == [1, 2]


async def test_concurrent_updates_without_expected_version_are_both_recorded(
    notes: NoteService, memory: str, db: Database
) -> None:
    note = await notes.create(memory, NoteDraft(title="old title", content="old"), actor=None)
    results = await _race(
        db,
        notes,
        memory,
        note,
        NotePatch(title="new title"),
        NotePatch(content="new content"),
    )

    assert all(isinstance(r, Note) for r in results), results
    current = await notes.get(memory, note.id)
    assert current is not None
    # Each update started from the other's result, so neither change is lost.
    assert (current.version, current.title, current.content) == (3, "new title", "new content")
    versions = await notes.versions(memory, note.id)
    assert [v.version for v in versions] == [1, 2, 3]
    assert {(v.title, v.content) for v in versions[1:]} >= {("new title", "new content")}
