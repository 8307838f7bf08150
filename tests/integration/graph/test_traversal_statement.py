"""The walk reads the edges among its nodes in the same statement: they must be exactly the
edges the standalone read gives for the same nodes, and each end's index must point at that
end among the walk's nodes."""

from __future__ import annotations

import random

import pytest

from fortemi.graph.traversal.repository import TraversalRepository
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteService
from tests.support.traversal import Link, add_links, add_notes


@pytest.mark.parametrize(("min_score", "max_nodes"), [(0.0, 50), (0.5, 50), (0.0, 7)])
async def test_the_walks_edges_are_the_standalone_edge_read_of_its_nodes(
    db: Database, memory: str, tagged_notes: NoteService, min_score: float, max_nodes: int
) -> None:
    ids = await add_notes(tagged_notes, memory, [f"n{i}" for i in range(16)])
    rng = random.Random(7)  # noqa: S311 - test data, not secrets
    links: dict[tuple[int, int, str], Link] = {}
    for _ in range(60):
        a, b = rng.sample(range(16), 2)
        kind = rng.choice(["semantic", "semantic", "explicit", "wiki"])
        score = round(rng.uniform(0.0, 1.0), 3)
        pruned = kind == "semantic" and rng.random() < 0.2
        links[(a, b, kind)] = Link(ids[a], ids[b], kind, score, pruned, rank=rng.randint(1, 5))
        if kind == "semantic" and rng.random() < 0.7:  # mostly both ways, as Linking writes
            links[(b, a, kind)] = Link(ids[b], ids[a], kind, score, pruned)
    await add_links(db, memory, list(links.values()))
    repository = TraversalRepository()
    async with db.memory_transaction(memory) as conn:
        walk = await repository.walk(
            conn, ids[0], depth=3, max_nodes=max_nodes, min_score=min_score,
            max_edges_per_node=None, gamma=1.0, visibility=None,
        )  # fmt: skip
        assert walk is not None
        returned = list(walk.nodes.id)
        alone = await repository.links(conn, returned, min_score=min_score, gamma=1.0)
    assert len(returned) > 3
    assert len(walk.edges)
    assert walk.edges.rows() == alone
    assert walk.edges.source_at is not None
    assert walk.edges.target_at is not None
    assert [returned[i] for i in walk.edges.source_at] == list(walk.edges.source)
    assert [returned[i] for i in walk.edges.target_at] == list(walk.edges.target)
