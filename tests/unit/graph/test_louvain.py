"""The neighbourhood's Louvain: as good as networkx's, deterministic, and its edge cases."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from fortemi.graph.traversal.louvain import louvain


def _planted(
    seed: int, n: int = 200, groups: int = 8, edges: int = 350
) -> list[tuple[int, int, float]]:
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    size = n // groups
    found: dict[tuple[int, int], float] = {}
    while len(found) < edges:
        a = rng.randrange(n)
        b = rng.randrange(n) if rng.random() < 0.2 else (a // size) * size + rng.randrange(size)
        if a != b:
            found[(min(a, b), max(a, b))] = rng.uniform(0.1, 1.0)
    return [(a, b, w) for (a, b), w in found.items()]


def _modularity(n: int, edges: list[tuple[int, int, float]], labels: list[int]) -> float:
    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(edges)
    groups: dict[int, set[int]] = {}
    for node, label in enumerate(labels):
        groups.setdefault(label, set()).add(node)
    return float(nx.community.modularity(graph, list(groups.values())))


@pytest.mark.parametrize("seed", range(5))
def test_modularity_matches_networkx_louvain_on_planted_partitions(seed: int) -> None:
    edges = _planted(seed)
    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(200))
    graph.add_weighted_edges_from(edges)
    reference = nx.community.modularity(graph, nx.community.louvain_communities(graph, seed=1))
    ours = _modularity(200, edges, louvain(200, edges))
    assert ours >= 0.97 * reference


def test_the_same_graph_gives_the_same_partition_numbered_by_first_node() -> None:
    edges = _planted(3)
    first = louvain(200, edges)
    assert louvain(200, edges) == first
    assert first[0] == 0
    seen: list[int] = []
    for label in first:
        if label not in seen:
            seen.append(label)
    assert seen == list(range(len(seen)))


def test_two_triangles_joined_weakly_split_and_isolated_nodes_stand_alone() -> None:
    triangles = [(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0), (3, 4, 1.0), (4, 5, 1.0), (3, 5, 1.0)]
    labels = louvain(7, [*triangles, (2, 3, 0.1)])
    assert labels[:3] == [0, 0, 0]
    assert labels[3:6] == [1, 1, 1]
    assert labels[6] == 2
    assert louvain(3, []) == [0, 1, 2]
