"""The neighbourhood's partition gives what the reference loop over pairs gave:
the same communities, ids and confidences (to the bit), on 20 random sub-graphs."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

import igraph
import pytest

from fortemi.graph.traversal.communities import partition
from fortemi.graph.traversal.louvain import _RANDOM, _SEED
from fortemi.graph.traversal.models import EdgeColumns, EdgeKind


def _reference_louvain(count: int, edges: Sequence[tuple[int, int, float]]) -> list[int]:
    # The list-based louvain of 3852e7c, verbatim but for names.
    if not edges:
        return list(range(count))
    graph = igraph.Graph(n=count, edges=[(i, j) for i, j, _ in edges])
    _RANDOM.seed(_SEED)
    found = graph.community_multilevel(weights=[weight for _, _, weight in edges]).membership
    order: dict[int, int] = {}
    for c in found:
        order.setdefault(c, len(order))
    return [order[c] for c in found]


def _reference_partition(
    node_ids: Sequence[UUID], edges: EdgeColumns
) -> tuple[dict[UUID, int], dict[UUID, float]]:
    # The loop over pairs this module replaced (3852e7c), verbatim but for names.
    index = {node: i for i, node in enumerate(node_ids)}
    weights: dict[tuple[int, int], float] = {}
    for source, target, score in zip(edges.source, edges.target, edges.score, strict=True):
        a, b = index[source], index[target]
        pair = (a, b) if a < b else (b, a)
        weights[pair] = max(weights.get(pair, 0.0), score, 1e-6)
    found = _reference_louvain(len(node_ids), [(a, b, w) for (a, b), w in weights.items()])
    size = Counter(found)
    first: dict[int, int] = {}
    for i, c in enumerate(found):
        first.setdefault(c, i)
    ranked = sorted(size, key=lambda c: (-size[c], first[c]))
    renumber = {c: rank for rank, c in enumerate(ranked)}
    total = [0.0] * len(node_ids)
    inside = [0.0] * len(node_ids)
    for (a, b), weight in weights.items():
        total[a] += weight
        total[b] += weight
        if found[a] == found[b]:
            inside[a] += weight
            inside[b] += weight
    community = {node: renumber[found[i]] for i, node in enumerate(node_ids)}
    confidence = {
        node: 1.0 if total[i] == 0 else inside[i] / total[i] for i, node in enumerate(node_ids)
    }
    return community, confidence


def _subgraph(seed: int) -> tuple[list[UUID], EdgeColumns]:
    """A neighbourhood-like graph: topic clusters, both directions and several kinds per
    pair, zero scores, isolated nodes; sizes from empty to maxNodes 200."""
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    n = [1, 2, 5, 40, 200][seed % 5]
    nodes = [UUID(int=rng.getrandbits(128)) for _ in range(n)]
    groups = max(1, n // rng.choice([5, 10, 25]))
    edges: list[tuple[UUID, UUID, EdgeKind, float]] = []
    for _ in range(0 if seed % 7 == 0 else int(n * rng.uniform(0.5, 2.5))):
        a = rng.randrange(n)
        same = rng.random() < 0.85
        b = rng.randrange(n) if not same else (a % groups) + groups * rng.randrange(n // groups)
        if a == b or b >= n:
            continue
        kind = rng.choice(list(EdgeKind))
        score = rng.choice([0.0, 1.0, round(rng.random(), 3), rng.random()])
        edges.append((nodes[a], nodes[b], kind, score))
        if rng.random() < 0.3:
            edges.append((nodes[b], nodes[a], kind, rng.random()))
    rng.shuffle(edges)
    return nodes, EdgeColumns(
        source=[e[0] for e in edges],
        target=[e[1] for e in edges],
        kind=[e[2] for e in edges],
        score=[e[3] for e in edges],
        rank=[None] * len(edges),
        set_id=[None] * len(edges),
        model=[None] * len(edges),
        computed_at=[datetime(2026, 1, 1, tzinfo=UTC)] * len(edges),
        bidirectional=[False] * len(edges),
    )


@pytest.mark.parametrize("seed", range(20))
def test_numpy_partition_matches_the_loop_over_pairs(seed: int) -> None:
    nodes, edges = _subgraph(seed)
    community, confidence = partition(nodes, edges)
    expected_community, expected_confidence = _reference_partition(nodes, edges)
    assert community == [expected_community[node] for node in nodes]
    assert all(type(c) is int for c in community)
    # Bit for bit: the same sums in the same order, the same division.
    assert [c.hex() for c in confidence] == [expected_confidence[n].hex() for n in nodes]
    if len(nodes) >= 40 and len(edges):
        assert len(set(community)) > 1
        assert 0.0 < min(confidence) < 1.0
