"""The lexical segment path: the exhaustive ranking from postings held in RAM plus what
changed since, read in the query's snapshot; never read when it could be wrong."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID, uuid4

import pytest

from fortemi.platform.database import Database
from fortemi.platform.memories import MemoryService
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService
from fortemi.platform.notes.models import NoteFilter
from fortemi.retrieval import lexical as lexical_module
from fortemi.retrieval.lexical import LexicalLeg, LexicalPath, LexicalTrace
from fortemi.retrieval.query import parse_query
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.search import Scope, SearchMode, SearchRequest, SearchService
from fortemi.retrieval.segments import TOMBSTONE_RETENTION, Segments

Ranked = list[tuple[UUID, float]]


def _notes(db: Database) -> NoteService:
    return NoteService(db, max_note_bytes=65_536, max_page_size=100, max_upsert_batch=50)


async def _both(
    db: Database, leg: LexicalLeg, memory: str, text: str, k: int = 5
) -> tuple[LexicalTrace, Ranked, Ranked]:
    """The leg's ranking by its default path (traced) and by the exhaustive statement, in
    one snapshot."""
    query = parse_query(text)
    trace = LexicalTrace()
    async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
        fast = await leg.rank(conn, memory, query, NoteFilter(), k, trace=trace)
        exhaustive = await leg.rank(conn, memory, query, NoteFilter(), k, pruning=False)
    return trace, fast, exhaustive


async def test_writes_after_the_build_are_ranked_exactly_from_the_delta(
    db: Database, memory: str
) -> None:
    notes = _notes(db)
    ids = [
        (
            await notes.create(
                memory, NoteDraft(content=f"copper kettle {'walnut ' * i}"), actor="t"
            )
        ).id
        for i in range(8)
    ]
    segments = Segments(db, budget=1_000_000)
    leg = LexicalLeg(RetrievalRepository(), segments=segments)
    try:
        assert await segments.ready(memory) is not None
        # After the build: one note changed, one soft deleted, one purged, one new.
        await notes.update(memory, ids[0], NotePatch(content="walnut walnut walnut"), actor="t")
        await notes.delete(memory, ids[1], actor="t")
        await notes.delete(memory, ids[2], actor="t")
        await notes.purge(memory, ids[2])
        added = (await notes.create(memory, NoteDraft(content="walnut kettle"), actor="t")).id
        trace, fast, exhaustive = await _both(db, leg, memory, "walnut kettle")
        assert trace.path is LexicalPath.SEGMENT
        assert fast == exhaustive
        found = {note_id for note_id, _ in fast}
        assert ids[1] not in found
        assert ids[2] not in found
        assert {ids[0], added} <= {
            note_id for note_id, _ in (await _both(db, leg, memory, "walnut", 10))[1]
        }
        assert trace.postings_read >= trace.postings_total  # stale postings are read, not counted
    finally:
        await segments.close()


async def test_search_explains_the_segment_path_and_matches_the_exhaustive_leg(
    db: Database, memory: str
) -> None:
    notes = _notes(db)
    for i in range(12):
        text = f"harbor lantern {'meadow ' * (i % 4)}{'thistle' if i % 5 == 0 else ''}"
        await notes.create(
            memory, NoteDraft(content=text, tags=("keep",) if i % 2 else ()), actor="t"
        )
    service = SearchService(db, None, segment_postings=1_000_000)
    try:
        assert await service.segments.ready(memory) is not None
        scope = [Scope(memory, None)]
        asked = {"query": "thistle meadow harbor", "mode": SearchMode.LEXICAL, "limit": 5}
        fast = await service.search(scope, SearchRequest(**asked))  # type: ignore[arg-type]
        slow = await service.search(scope, SearchRequest(**asked, lexical_pruning=False))  # type: ignore[arg-type]
        assert fast.lexical is not None
        assert fast.lexical.path == "segment"
        assert slow.lexical is not None
        assert slow.lexical.path == "exhaustive"
        assert [(h.note_id, h.score) for h in fast.hits] == [
            (h.note_id, h.score) for h in slow.hits
        ]
        assert (
            fast.lexical.postings_read == fast.lexical.postings_total == 24
        )  # harbor 12, meadow 9, thistle 3
    finally:
        await service.close()


async def test_a_segment_of_a_memory_made_again_under_its_name_is_never_read(
    db: Database, memory_service: MemoryService
) -> None:
    name = f"seg{id(db) % 10_000}_remade"
    await memory_service.create(name, created_by="t")
    notes = _notes(db)
    segments = Segments(db, budget=1_000_000)
    leg = LexicalLeg(RetrievalRepository(), segments=segments)
    try:
        old = (await notes.create(name, NoteDraft(content="pebble pebble"), actor="t")).id
        assert await segments.ready(name) is not None
        await memory_service.delete(name, confirm=name)
        await memory_service.create(name, created_by="t")
        new = (await notes.create(name, NoteDraft(content="pebble"), actor="t")).id
        trace, fast, exhaustive = await _both(db, leg, name, "pebble")
        assert trace.path is not LexicalPath.SEGMENT  # the old segment was dropped, not read
        assert [n for n, _ in fast] == [new]
        assert old != new
        assert fast == exhaustive
        assert await segments.ready(name) is not None  # and a new one was built
        trace, fast, _ = await _both(db, leg, name, "pebble")
        assert trace.path is LexicalPath.SEGMENT
        assert [n for n, _ in fast] == [new]
    finally:
        await segments.close()
        await memory_service.delete(name, confirm=name)


async def test_a_segment_taken_after_the_query_snapshot_is_not_read(
    db: Database, memory: str
) -> None:
    notes = _notes(db)
    first = (await notes.create(memory, NoteDraft(content="thistle"), actor="t")).id
    segments = Segments(db, budget=1_000_000)
    leg = LexicalLeg(RetrievalRepository(), segments=segments)
    query = parse_query("thistle")
    try:
        async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
            await conn.fetchval("SELECT 1")  # the query's snapshot is taken here
            later = (await notes.create(memory, NoteDraft(content="thistle thistle"), actor="t")).id
            assert await segments.ready(memory) is not None  # it holds ``later``
            trace = LexicalTrace()
            found = await leg.rank(conn, memory, query, NoteFilter(), 5, trace=trace)
        assert trace.path is not LexicalPath.SEGMENT
        assert [n for n, _ in found] == [first]  # ``later`` is not in this snapshot
        trace, fast, exhaustive = await _both(db, leg, memory, "thistle")
        assert trace.path is LexicalPath.SEGMENT
        assert fast == exhaustive
        assert [n for n, _ in fast] == [later, first]
    finally:
        await segments.close()


async def test_too_many_changes_go_to_the_statements_and_start_a_rebuild(
    db: Database, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical_module, "MOST_CHANGES", 3)
    monkeypatch.setattr(lexical_module, "REBUILD_CHANGES", 2)
    notes = _notes(db)
    segments = Segments(db, budget=1_000_000)
    leg = LexicalLeg(RetrievalRepository(), segments=segments)
    try:
        assert await segments.ready(memory) is not None  # empty
        for i in range(5):
            await notes.create(memory, NoteDraft(content=f"lantern {'copper ' * i}"), actor="t")
        trace, fast, exhaustive = await _both(db, leg, memory, "lantern copper")
        assert trace.path is not LexicalPath.SEGMENT
        assert fast == exhaustive
        segment = await segments.ready(memory)  # the rebuild the query started
        assert segment is not None
        assert segment.size == 5
        trace, fast, exhaustive = await _both(db, leg, memory, "lantern copper")
        assert trace.path is LexicalPath.SEGMENT
        assert fast == exhaustive
    finally:
        await segments.close()


async def test_closing_stops_a_build_under_way_and_leaves_no_task(
    db: Database, memory: str
) -> None:
    await _notes(db).create(memory, NoteDraft(content="meadow"), actor="t")
    segments = Segments(db, budget=1_000_000)
    assert segments.current(memory) is None  # none yet: this starts the build
    builds = [
        t
        for t in asyncio.all_tasks()
        if t.get_coro().__qualname__ == "HeldSegments._build"  # type: ignore[union-attr]
    ]
    assert len(builds) == 1
    assert not builds[0].done()
    await segments.close()
    assert builds[0].cancelled()


async def test_a_memory_over_the_budget_gets_no_segment_and_is_still_searched(
    db: Database, memory: str
) -> None:
    notes = _notes(db)
    for _i in range(4):
        await notes.create(memory, NoteDraft(content="kettle harbor meadow walnut"), actor="t")
    segments = Segments(db, budget=10)  # 16 postings do not fit
    leg = LexicalLeg(RetrievalRepository(), segments=segments)
    try:
        assert await segments.ready(memory) is None
        trace, fast, exhaustive = await _both(db, leg, memory, "kettle walnut")
        assert trace.path is not LexicalPath.SEGMENT
        assert fast == exhaustive
        assert len(fast) == 4
    finally:
        await segments.close()


async def test_every_removal_from_the_index_leaves_a_tombstone(db: Database, memory: str) -> None:
    notes = _notes(db)
    a = (await notes.create(memory, NoteDraft(content="copper"), actor="t")).id
    b = (await notes.create(memory, NoteDraft(content="copper"), actor="t")).id
    c = (await notes.create(memory, NoteDraft(content="copper"), actor="t")).id
    await notes.update(memory, a, NotePatch(content="walnut"), actor="t")  # re-indexed
    await notes.delete(memory, b, actor="t")  # soft delete
    async with db.memory_transaction(memory) as conn:
        await conn.execute("DELETE FROM note WHERE id = $1", c)  # a purge's cascade
        gone = [row["note_id"] for row in await conn.fetch("SELECT note_id FROM lex_gone")]
        fresh = await conn.fetchval(
            "SELECT count(*) FROM lex_doc WHERE xid >= pg_snapshot_xmin(pg_current_snapshot())"
        )
    assert sorted(map(str, gone)) == sorted(map(str, [a, b, c]))
    assert fresh == 0  # every write before this transaction is older than its snapshot


async def test_a_build_forgets_tombstones_older_than_any_readable_segment(
    db: Database, memory: str
) -> None:
    old, recent = uuid4(), uuid4()
    async with db.memory_transaction(memory) as conn:
        await conn.execute(
            "INSERT INTO lex_gone (note_id, at) VALUES ($1, clock_timestamp() - $3::interval),"
            " ($2, clock_timestamp())",
            old,
            recent,
            TOMBSTONE_RETENTION + timedelta(minutes=1),
        )
    segments = Segments(db, budget=1_000_000)
    try:
        assert await segments.ready(memory) is not None
    finally:
        await segments.close()
    async with db.memory_transaction(memory) as conn:
        kept = [row["note_id"] for row in await conn.fetch("SELECT note_id FROM lex_gone")]
    assert kept == [recent]


async def test_a_memory_far_over_the_budget_is_not_even_read(
    db: Database, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _notes(db)
    for _ in range(5):
        await notes.create(memory, NoteDraft(content="kettle harbor meadow walnut"), actor="t")
    async with db.memory_transaction(memory) as conn:
        await conn.execute("ANALYZE lex_posting")  # the estimate the build looks at: 20
    segments = Segments(db, budget=9)
    reads: list[str] = []

    async def build(conn: object) -> None:
        reads.append("read")
        raise AssertionError("a memory over twice the budget was read")

    monkeypatch.setattr(segments.repository, "build", build)
    try:
        assert await segments.ready(memory) is None
        assert reads == []
    finally:
        await segments.close()
