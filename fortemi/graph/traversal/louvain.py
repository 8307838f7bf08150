"""Louvain community detection (Blondel et al. 2008) for small graphs, over integer nodes.

A neighbourhood is at most 1,000 nodes, and it is partitioned on every ``graph`` request
that selects a community field, so the partition must cost a small part of the request's
budget (p95 <= 20 ms). networkx's ``louvain_communities`` is general (any hashable node,
directed graphs, multigraphs, a modularity evaluation per level) and measured 15-40 ms on a
200-node, 350-edge sub-graph; a pure-Python Louvain over lists of ints, 3-10 ms (several
local-moving sweeps of every node, each a Python loop over its neighbours). igraph's
``community_multilevel`` is the same algorithm in C: about 0.1-0.7 ms on the same graphs,
with the same modularity (the tests compare it with networkx's). The memory-wide partition
of graph maintenance still uses networkx.

Deterministic: igraph visits nodes in a random order drawn from the random number
generator it is given; this module gives it its own generator, seeded afresh before every
call, so the same graph always gives the same partition and no other user of ``random``
is disturbed (nothing else in the process uses igraph).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import igraph
import numpy as np
import numpy.typing as npt

__all__ = ["louvain", "membership"]

_SEED = 0
_RANDOM = random.Random(_SEED)  # noqa: S311 - a visiting order, not a secret
igraph.set_random_number_generator(_RANDOM)

Ints = npt.NDArray[np.intp]
Floats = npt.NDArray[np.float64]


def louvain(
    count: int, edges: Sequence[tuple[int, int, float]], *, resolution: float = 1.0
) -> list[int]:
    """Each node's community, numbered 0.. in order of each community's first node.

    ``edges``: undirected ``(i, j, weight)`` with ``i != j``, weights > 0, each pair once.
    """
    pairs = np.array([(i, j) for i, j, _ in edges], dtype=np.intp).reshape(-1, 2)
    weights = np.array([weight for _, _, weight in edges], dtype=np.float64)
    found: list[int] = membership(count, pairs, weights, resolution=resolution).tolist()
    return found


def membership(count: int, pairs: Ints, weights: Floats, *, resolution: float = 1.0) -> Ints:
    """:func:`louvain` over arrays: ``pairs`` of shape (k, 2), ``weights`` of shape (k,)."""
    if not len(pairs):
        return np.arange(count, dtype=np.intp)
    graph = igraph.Graph(n=count, edges=pairs)
    _RANDOM.seed(_SEED)
    found = np.asarray(
        graph.community_multilevel(weights=weights, resolution=resolution).membership,
        dtype=np.intp,
    )
    # Renumbered by first node: each label's first index, ranked.
    _, first, inverse = np.unique(found, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.intp)
    rank[np.argsort(first)] = np.arange(len(first), dtype=np.intp)
    renumbered: Ints = rank[inverse.reshape(-1)]
    return renumbered
