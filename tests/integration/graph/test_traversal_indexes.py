"""The traversal's statements can use the covering indexes of the links migration and of
the live notes' read scope: their predicates must stay the ones the statements filter on,
or the planner falls back to the heap."""

from __future__ import annotations

from fortemi.graph.traversal.repository import edges_statement, walk_statement
from fortemi.platform.database import Database, memory_schema
from fortemi.platform.notes import NoteService
from tests.support.traversal import Link, add_links, add_notes


async def test_the_walk_and_the_edges_are_index_only_scans_of_the_traversable_links(
    db: Database, memory: str, tagged_notes: NoteService
) -> None:
    a, b, c = await add_notes(tagged_notes, memory, ["a", "b", "c"])
    await add_links(
        db,
        memory,
        [Link(a, b, "semantic", 0.9), Link(b, c, "explicit", 1.0), Link(c, a, pruned=True)],
    )
    async with db.connection() as conn:
        await conn.execute(f"VACUUM {memory_schema(memory)}.note_link")  # the visibility map
        await conn.execute(f"VACUUM {memory_schema(memory)}.note")
    walk_sql, walk_args = walk_statement(
        a, depth=3, max_nodes=50, min_score=0.0, max_edges_per_node=None, gamma=1.0,
        visibility=None,
    )  # fmt: skip
    edges_sql, edges_args = edges_statement([a, b, c], min_score=0.0, gamma=1.0)
    async with db.memory_transaction(memory) as conn:
        # A three-note table is scanned whole otherwise; the question is whether the
        # indexes apply at all.
        await conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        walk = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + walk_sql, *walk_args))
        edges = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + edges_sql, *edges_args))
    assert "Index Only Scan using note_link_walk_source_idx" in walk
    # The walk's statement reads the edges among its nodes too: the source index again.
    assert walk.count("Index Only Scan using note_link_walk_source_idx") >= 2
    assert "Index Only Scan using note_link_walk_target_idx" in walk
    # Each note reached is checked live and readable without reading its row.
    assert "Index Only Scan using note_live_scope_idx" in walk
    assert "Index Only Scan using note_link_walk_source_idx" in edges
