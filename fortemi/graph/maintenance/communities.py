"""Louvain communities (networkx) with a fixed seed, ids ordered by size then smallest
note id, each node's confidence, and the partition's modularity.

:func:`partition` works on integer nodes ``0..n-1`` and edge arrays, as the plan holds
the graph; :func:`communities` is the same on a networkx graph of note ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias
from uuid import UUID

import networkx as nx
import numpy as np
import numpy.typing as npt

__all__ = ["LOUVAIN_SEED", "Communities", "NoteGraph", "Partition", "communities", "partition"]

if TYPE_CHECKING:
    NoteGraph: TypeAlias = nx.Graph[UUID]  # nodes are note ids
else:  # networkx's Graph is generic in its stubs only
    NoteGraph: TypeAlias = nx.Graph
LOUVAIN_SEED = 12
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Communities:
    """Louvain's partition: each node's community id and confidence, each community's
    members (index = id), and the partition's modularity."""

    community: dict[UUID, int]
    confidence: dict[UUID, float]
    members: list[list[UUID]]
    modularity: float


@dataclass(frozen=True, slots=True)
class Partition:
    """:class:`Communities` on integer nodes: ``of[i]`` is node i's community."""

    of: Ints
    confidence: Floats
    groups: list[list[int]]
    modularity: float

    def on(self, notes: Sequence[UUID]) -> Communities:
        """The same partition with node i named ``notes[i]``."""
        return Communities(
            dict(zip(notes, self.of.tolist(), strict=True)),
            dict(zip(notes, self.confidence.tolist(), strict=True)),
            [[notes[i] for i in group] for group in self.groups],
            self.modularity,
        )


def partition(
    n: int,
    a: Ints,
    b: Ints,
    weight: Floats,
    *,
    resolution: float = 1.0,
    seed: int = LOUVAIN_SEED,
) -> Partition:
    """Louvain on nodes ``0..n-1`` and the edges ``(a[e], b[e])`` (``a < b``, each pair
    once) weighted ``weight[e]``, deterministic for a given graph: a fixed seed, nodes
    added in order, edges in ``(a, b)`` order, and ids by size (largest first) then
    smallest member. A node's confidence is the share of its weighted degree that stays
    inside its community; an isolated node is its own community with confidence 1.0 (all
    of its — empty — neighbourhood is inside, and nothing pulls it elsewhere)."""
    if n == 0:
        return Partition(np.zeros(0, dtype=np.int64), np.zeros(0), [], 0.0)
    order = np.lexsort((b, a))
    a, b, weight = a[order], b[order], weight[order]
    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(zip(a.tolist(), b.tolist(), weight.tolist(), strict=True))
    found = nx.community.louvain_communities(
        graph, weight="weight", resolution=resolution, seed=seed
    )
    groups = sorted((sorted(group) for group in found), key=lambda g: (-len(g), g[0]))
    of = np.empty(n, dtype=np.int64)
    for number, group in enumerate(groups):
        of[group] = number
    # Weighted degree, and its part inside the community, summed per node over its
    # neighbours in ascending order (bincount adds in input order).
    ends, others = np.concatenate([a, b]), np.concatenate([b, a])
    both = np.concatenate([weight, weight])
    order = np.lexsort((others, ends))
    ends, others, both = ends[order], others[order], both[order]
    degree: Floats = np.bincount(ends, weights=both, minlength=n).astype(np.float64)
    inside = np.bincount(ends, weights=np.where(of[ends] == of[others], both, 0.0), minlength=n)
    confidence = np.divide(inside, degree, out=np.ones(n), where=degree > 0)
    return Partition(
        of, confidence, groups, _modularity(of, len(groups), a, b, weight, degree, resolution)
    )


def _modularity(
    of: Ints, count: int, a: Ints, b: Ints, weight: Floats, degree: Floats, resolution: float
) -> float:
    """Newman's modularity with a resolution, as ``nx.community.modularity`` defines it
    (which walks every community's edges in Python: a tenth of a second at 10k notes)."""
    total = float(degree.sum())
    if len(a) == 0 or total <= 0:
        return 0.0
    inner = of[a] == of[b]
    within = np.bincount(of[a][inner], weights=weight[inner], minlength=count)
    degrees = np.bincount(of, weights=degree, minlength=count)
    return float(np.sum(within / (total / 2) - resolution * degrees * degrees / total**2))


def communities(
    graph: NoteGraph, *, resolution: float = 1.0, seed: int = LOUVAIN_SEED
) -> Communities:
    """:func:`partition` on a graph of note ids (edge attribute ``weight``, default 1),
    nodes in id order."""
    nodes = sorted(graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    edges = [
        (min(index[x], index[y]), max(index[x], index[y]), float(d.get("weight", 1.0)))
        for x, y, d in graph.edges(data=True)
    ]
    found = partition(
        len(nodes),
        np.array([e[0] for e in edges], dtype=np.int64),
        np.array([e[1] for e in edges], dtype=np.int64),
        np.array([e[2] for e in edges], dtype=np.float64),
        resolution=resolution,
        seed=seed,
    )
    return found.on(nodes)
