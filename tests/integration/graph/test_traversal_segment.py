"""The traversal segment path: the walk from a memory's links held in RAM, checked in the
query's own snapshot; never read when the graph changed since, or when it is newer than
the query's snapshot. (That it answers exactly as the statement does is
``test_traversal_reference.py``'s.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from uuid import UUID

import pytest

from fortemi.graph.maintenance.plan import Step
from fortemi.graph.maintenance.service import GraphMaintenance
from fortemi.graph.traversal import TraversalService
from fortemi.graph.traversal.models import GraphParams, GraphRequest, NeighbourhoodColumns
from fortemi.graph.traversal.segments import CHANGE_RETENTION
from fortemi.platform.database import Database
from fortemi.platform.notes import NotePatch, NoteService
from tests.support.traversal import Link, add_links, add_notes

_REQUEST = GraphRequest(depth=3, max_nodes=50)


def _answer(found: NeighbourhoodColumns) -> tuple[object, ...]:
    """Everything a caller receives but the path."""
    nodes, edges, meta = found.nodes, found.edges, found.meta
    return (
        list(zip(nodes.id, nodes.depth, nodes.title, strict=True)),
        [(e.source, e.target, e.kind, e.score, e.rank, e.bidirectional) for e in edges.rows()],
        (meta.total_nodes, meta.total_edges, meta.truncated_nodes, meta.reasons),
    )


async def _chain(db: Database, notes: NoteService, memory: str) -> list[UUID]:
    """n0 - n1 - n2 - n3 - n4 by semantic links both ways, and n0 -> n3 explicit."""
    ids = await add_notes(notes, memory, [f"n{i}" for i in range(5)])
    links = [Link(ids[i], ids[i + 1], score=0.9 - 0.1 * i) for i in range(4)]
    links += [Link(b.target, b.source, score=b.score) for b in links]
    links.append(Link(ids[0], ids[3], kind="explicit", score=0.5))
    await add_links(db, memory, links)
    return ids


@pytest.fixture
async def ids(db: Database, memory: str, tagged_notes: NoteService) -> list[UUID]:
    """The notes of :func:`_chain`."""
    return await _chain(db, tagged_notes, memory)


@pytest.fixture
async def segmented(db: Database) -> AsyncIterator[TraversalService]:
    """A traversal service with segments (its builds stopped afterwards)."""
    service = TraversalService(db, segment_links=10_000)
    yield service
    await service.close()


async def _compare(
    segmented: TraversalService, plain: TraversalService, memory: str, start: UUID
) -> str:
    """The segment service's answer equals the statement's; returns the path it took."""
    found = await segmented.columns(memory, start, _REQUEST, visibility=None, communities=False)
    expected = await plain.columns(memory, start, _REQUEST, visibility=None, communities=False)
    assert expected.meta.path == "statement"
    assert _answer(found) == _answer(expected)
    return found.meta.path


async def _change_count(db: Database, memory: str) -> int:
    async with db.memory_transaction(memory) as conn:
        return int(await conn.fetchval("SELECT count(*) FROM graph_change"))


Change = Callable[[Database, NoteService, str, list[UUID]], Awaitable[None]]


async def _new_link(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    await add_links(db, memory, [Link(ids[4], ids[0], kind="wiki", score=1.0)])


async def _link_gone(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    async with db.memory_transaction(memory) as conn:
        await conn.execute("DELETE FROM note_link WHERE kind = 'explicit'")


async def _pruned(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    async with db.memory_transaction(memory) as conn:
        await conn.execute(
            "UPDATE note_link SET pruned = true WHERE source_id = $1 OR target_id = $1", ids[1]
        )


async def _rescored(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    async with db.memory_transaction(memory) as conn:
        await conn.execute("UPDATE note_link SET score = 0.05 WHERE kind = 'explicit'")


async def _note_deleted(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    await notes.delete(memory, ids[2], actor="test")


async def _note_hidden(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    await notes.update(memory, ids[1], NotePatch(project="elsewhere"), actor="test")


async def _note_purged(db: Database, notes: NoteService, memory: str, ids: list[UUID]) -> None:
    async with db.memory_transaction(memory) as conn:
        await conn.execute("DELETE FROM note WHERE id = $1", ids[3])


@pytest.mark.parametrize(
    "change",
    [_new_link, _link_gone, _pruned, _rescored, _note_deleted, _note_hidden, _note_purged],
)
async def test_after_any_change_to_the_graph_the_statement_answers_until_a_rebuild(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    change: Change,
    ids: list[UUID],
    segmented: TraversalService,
) -> None:
    plain = TraversalService(db)
    assert await segmented.segments.ready(memory) is not None
    assert await _compare(segmented, plain, memory, ids[0]) == "segment"
    before = await _change_count(db, memory)
    await change(db, tagged_notes, memory, ids)
    assert await _change_count(db, memory) == before + 1  # one row per statement
    assert await _compare(segmented, plain, memory, ids[0]) == "statement"
    assert await segmented.segments.ready(memory) is not None  # the rebuild it asked for
    assert await _compare(segmented, plain, memory, ids[0]) == "segment"


async def test_edits_that_leave_links_and_read_scopes_alone_keep_the_segment(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    ids: list[UUID],
    segmented: TraversalService,
) -> None:
    plain = TraversalService(db)
    assert await segmented.segments.ready(memory) is not None
    before = await _change_count(db, memory)
    await tagged_notes.update(
        memory, ids[1], NotePatch(title="renamed", content="new text"), actor="test"
    )
    async with db.memory_transaction(memory) as conn:  # a statement that changes no link
        await conn.execute("DELETE FROM note_link WHERE kind = 'wiki'")
    assert await _change_count(db, memory) == before
    # Titles are read in the query's snapshot, never from the segment.
    assert await _compare(segmented, plain, memory, ids[0]) == "segment"


async def test_a_segment_taken_after_the_query_snapshot_is_not_read(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    ids: list[UUID],
    segmented: TraversalService,
) -> None:
    params = GraphParams(depth=3, max_nodes=50, min_score=0.0, max_edges_per_node=None)
    async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
        await conn.fetchval("SELECT 1")  # the query's snapshot is taken here
        await _new_link(db, tagged_notes, memory, ids)
        segment = await segmented.segments.ready(memory)  # it holds the new link
        assert segment is not None
        walk = await segmented._segment_walk(
            conn, memory, segment, ids[0], params, None, concepts=False
        )
        assert walk is None  # the statement answers: the segment saw a later commit
    assert segmented.segments.hits == 0


async def test_a_start_the_segment_does_not_know_goes_to_the_statement(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    ids: list[UUID],
    segmented: TraversalService,
) -> None:
    assert await segmented.segments.ready(memory) is not None
    [late] = await add_notes(tagged_notes, memory, ["late"])  # no link: no change row
    found = await segmented.columns(memory, late, _REQUEST, visibility=None)
    assert (list(found.nodes.id), found.meta.path) == ([late], "statement")
    found = await segmented.columns(memory, ids[4], _REQUEST, visibility=None)
    assert found.meta.path == "segment"


async def test_max_edges_per_node_is_walked_by_the_statement(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    ids: list[UUID],
    segmented: TraversalService,
) -> None:
    assert await segmented.segments.ready(memory) is not None
    request = GraphRequest(depth=3, max_nodes=50, max_edges_per_node=1)
    found = await segmented.columns(memory, ids[0], request, visibility=None)
    assert found.meta.path == "statement"
    assert segmented.segments.hits == 0


async def test_a_memory_over_the_budget_gets_no_segment_and_is_still_walked(
    db: Database, memory: str, tagged_notes: NoteService
) -> None:
    ids = await _chain(db, tagged_notes, memory)
    segmented = TraversalService(db, segment_links=5)  # 9 links do not fit
    try:
        assert await segmented.segments.ready(memory) is None
        found = await segmented.columns(memory, ids[0], _REQUEST, visibility=None)
        assert (len(found.nodes), found.meta.path) == (5, "statement")
    finally:
        await segmented.close()


async def test_closing_stops_a_build_under_way_and_leaves_no_task(
    db: Database, memory: str, tagged_notes: NoteService
) -> None:
    await _chain(db, tagged_notes, memory)
    segmented = TraversalService(db, segment_links=10_000)
    assert segmented.segments.current(memory) is None  # none yet: this starts the build
    builds = [
        t
        for t in asyncio.all_tasks()
        if t.get_coro().__qualname__ == "HeldSegments._build"  # type: ignore[union-attr]
    ]
    assert len(builds) == 1
    assert not builds[0].done()
    await segmented.close()
    assert builds[0].cancelled()


async def test_a_build_forgets_change_rows_older_than_any_readable_segment(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    ids: list[UUID],
    segmented: TraversalService,
) -> None:
    await _new_link(db, tagged_notes, memory, ids)
    async with db.memory_transaction(memory) as conn:
        await conn.execute("UPDATE graph_change SET at = at - $1::interval", CHANGE_RETENTION * 2)
        await conn.execute("INSERT INTO graph_change DEFAULT VALUES")  # a recent one stays
    assert await segmented.segments.ready(memory) is not None
    assert await _change_count(db, memory) == 1


async def test_maintenance_forgets_change_rows_of_a_graph_never_walked(
    db: Database, memory: str, tagged_notes: NoteService
) -> None:
    await _chain(db, tagged_notes, memory)
    async with db.memory_transaction(memory) as conn:
        await conn.execute("UPDATE graph_change SET at = at - $1::interval", CHANGE_RETENTION * 2)
    assert await _change_count(db, memory) > 0
    await GraphMaintenance(db).run(memory, [Step.COMMUNITIES])
    assert await _change_count(db, memory) == 0
