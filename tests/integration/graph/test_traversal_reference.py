"""The traversal statement against a plain-Python reading of its contract, on random graphs.

The walk is one hand-written recursive statement, tuned for speed (links grouped before
they are normalised, one sort for the edges, ...). Each such change must leave the answer
exactly as the contract in :mod:`fortemi.graph.traversal.service` defines it, so the
reference below reads the stored links and applies the contract literally: nodes in BFS
order (depth, strongest link from the previous level, id), the ``maxNodes`` cut and its
totals, ``minScore`` on normalised scores, ``maxEdgesPerNode``, readability, pruning, and
one edge per (pair, kind) in its stronger direction. The graphs are random, with scores
rounded so that ties are common, semantic links mostly stored both ways as Linking writes
them, pruned links, deleted notes and notes of a project the caller may not read.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass
from uuid import UUID

import pytest

from fortemi.graph.traversal import TraversalService
from fortemi.graph.traversal.models import GraphRequest
from fortemi.platform.database import Database
from fortemi.platform.errors import NotFound
from fortemi.platform.notes import NoteService
from fortemi.platform.notes.models import NameSet, NoteVisibility
from tests.support.traversal import Link, add_links, add_notes

_HIDDEN = "hidden"
_RESTRICTED = NoteVisibility(
    memory_notes=True, projects=NameSet(frozenset({_HIDDEN}), only=False), skills=NameSet()
)


@dataclass(frozen=True, slots=True)
class Stored:
    source: UUID
    target: UUID
    kind: str
    score: float  # as stored (a real), widened to a double
    pruned: bool


@dataclass(frozen=True, slots=True)
class Expected:
    nodes: list[tuple[UUID, int]]  # (id, depth) in BFS order
    edges: list[tuple[UUID, UUID, str, float, bool]]  # source, target, kind, score, both ways
    found: int
    total_edges: int


def _reference(
    links: list[Stored],
    readable: set[UUID],
    start: UUID,
    request: GraphRequest,
    gamma: float,
) -> Expected | None:
    semantic = [link.score for link in links if link.kind == "semantic"]
    low, high = (min(semantic), max(semantic)) if semantic else (0.0, 0.0)
    span = high - low if high > low else None

    def normalised(link: Stored) -> float:
        if link.kind != "semantic":
            return link.score
        if span is None:
            return 1.0
        return float((max(link.score - low, 0.0) / span) ** gamma)

    k, min_score = request.max_edges_per_node, request.min_score
    traversable = [x for x in links if x.kind != "semantic" or not x.pruned]
    # node -> neighbour -> kind -> strongest normalised score, both directions
    incident: dict[UUID, dict[UUID, dict[str, float]]] = defaultdict(dict)
    for link in traversable:
        score = normalised(link)
        for a, b in ((link.source, link.target), (link.target, link.source)):
            kinds = incident[a].setdefault(b, {})
            kinds[link.kind] = max(kinds.get(link.kind, -1.0), score)

    def neighbours(node: UUID) -> dict[UUID, tuple[float, int]]:
        """Readable neighbours passing minScore: (strongest score, kinds); with k, the k
        strongest (ties by id)."""
        found = {}
        for other, kinds in incident[node].items():
            passing = [score for score in kinds.values() if score >= min_score]
            if other in readable and passing:
                found[other] = (max(passing), len(passing))
        if k is not None:
            found = dict(sorted(found.items(), key=lambda item: (-item[1][0], item[0]))[:k])
        return found

    if start not in readable:
        return None
    order, depth_of = [start], {start: 0}
    frontier, level, found, cut, cut_edges = [start], 0, 1, False, 0
    while level < request.depth and not cut and frontier:
        candidates: dict[UUID, tuple[float, int]] = {}
        for node in frontier:
            for other, (score, count) in neighbours(node).items():
                if other not in depth_of:
                    best, into = candidates.get(other, (-1.0, 0))
                    candidates[other] = (max(best, score), into + count)
        ranked = sorted(candidates, key=lambda other: (-candidates[other][0], other))
        room = request.max_nodes - len(order)
        level += 1
        frontier = ranked[:room]
        found += len(ranked)
        cut = len(ranked) > room
        cut_edges = sum(candidates[other][1] for other in ranked[room:])
        for other in frontier:
            depth_of[other] = level
        order += frontier

    returned = set(order)
    pairs: dict[tuple[UUID, UUID, str], list[tuple[float, Stored]]] = defaultdict(list)
    for link in traversable:
        score = normalised(link)
        if link.source in returned and link.target in returned and score >= min_score:
            lo, hi = sorted((link.source, link.target))
            pairs[(lo, hi, link.kind)].append((score, link))
    every = []
    for (_, _, kind), rows in sorted(pairs.items()):
        score, link = min(rows, key=lambda row: (-row[0], row[1].source))
        every.append((link.source, link.target, kind, score, len(rows) == 2))
    shown = every
    if k is not None:
        kept = {tuple(sorted((a, b))) for a in order for b in neighbours(a) if b in returned}
        shown = [edge for edge in every if tuple(sorted(edge[:2])) in kept]
    return Expected(
        nodes=[(node, depth_of[node]) for node in order],
        edges=shown,
        found=found,
        total_edges=len(every) + cut_edges,
    )


async def _graph(
    db: Database, notes: NoteService, memory: str, rng: random.Random, *, dense: bool
) -> tuple[list[UUID], list[Stored], set[UUID], set[UUID]]:
    """Random notes and links; returns the ids, the stored links, and which notes are
    readable with no scope and with the restricted one."""
    ids = await add_notes(notes, memory, [f"n{i}" for i in range(22)])
    ids += await add_notes(notes, memory, ["h0", "h1", "h2"], project=_HIDDEN)
    deleted = set(rng.sample(ids[1:22], 2))
    for note in deleted:
        await notes.delete(memory, note, actor="test")
    links: dict[tuple[int, int, str], Link] = {}
    for _ in range(140 if dense else 45):
        a, b = rng.sample(range(len(ids)), 2)
        kind = rng.choice(["semantic", "semantic", "semantic", "explicit", "wiki"])
        score = round(rng.uniform(0.0, 1.0), 1)  # coarse: many ties
        pruned = kind == "semantic" and rng.random() < 0.15
        links[(a, b, kind)] = Link(ids[a], ids[b], kind, score, pruned, rank=rng.randint(1, 9))
        if kind == "semantic" and rng.random() < 0.8:  # mostly both ways, as Linking writes
            reverse = round(score if rng.random() < 0.7 else rng.uniform(0.0, 1.0), 1)
            links[(b, a, kind)] = Link(ids[b], ids[a], kind, reverse, pruned)
    await add_links(db, memory, list(links.values()))
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT source_id, target_id, kind, score::float8 AS score, pruned FROM note_link"
        )
    stored = [
        Stored(r["source_id"], r["target_id"], r["kind"], r["score"], r["pruned"]) for r in rows
    ]
    live = set(ids) - deleted
    return ids, stored, live, live - set(ids[22:])


@pytest.mark.parametrize("path", ["statement", "segment"])
@pytest.mark.parametrize(
    ("seed", "dense", "gamma"), [(1, False, 1.0), (2, True, 1.0), (3, True, 2.0)]
)
async def test_the_walk_and_its_edges_are_exactly_the_contracts(
    db: Database,
    memory: str,
    tagged_notes: NoteService,
    seed: int,
    dense: bool,
    gamma: float,
    path: str,
) -> None:
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    ids, stored, live, restricted = await _graph(db, tagged_notes, memory, rng, dense=dense)
    service = TraversalService(db, gamma=gamma, segment_links=10**6 if path == "segment" else 0)
    if path == "segment":
        assert await service.segments.ready(memory) is not None
    starts = [ids[0], *rng.sample(ids[1:], 3)]
    compared = 0
    for start, depth, max_nodes, min_score, k, (scope, readable) in itertools.product(
        starts, (1, 2, 4), (3, 8, 50), (0.0, 0.3, 0.75), (None, 1, 3),
        ((None, live), (_RESTRICTED, restricted)),
    ):  # fmt: skip
        request = GraphRequest(depth, max_nodes, min_score, k)
        expected = _reference(stored, readable, start, request, gamma)
        if expected is None:
            with pytest.raises(NotFound):
                await service.columns(memory, start, request, visibility=scope)
            continue
        got = await service.columns(memory, start, request, visibility=scope, communities=False)
        case = (start, request, scope)
        assert list(zip(got.nodes.id, got.nodes.depth, strict=True)) == expected.nodes, case
        edges = [
            (e.source, e.target, e.kind.value, e.score, e.bidirectional) for e in got.edges.rows()
        ]
        assert edges == expected.edges, case
        assert got.meta.total_nodes == expected.found, case
        assert got.meta.total_edges == expected.total_edges, case
        compared += 1
    # Only a deleted or hidden start answers NOT_FOUND: the comparisons really ran.
    assert compared >= 2 * 3 * 3 * 3 * 3
    # The segment answered every walk without maxEdgesPerNode (the statement ranks each
    # node's neighbours for the others), and the statement path never used one.
    assert service.segments.hits == (compared // 3 if path == "segment" else 0)
    await service.close()
