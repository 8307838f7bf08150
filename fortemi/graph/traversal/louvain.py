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

__all__ = ["louvain", "membership"]

_SEED = 0
_RANDOM = random.Random(_SEED)  # noqa: S311 - a visiting order, not a secret
igraph.set_random_number_generator(_RANDOM)

# The C method under ``Graph.community_multilevel``: the membership list itself, without
# the ``VertexClustering`` the wrapper builds around it (a Python pass over the nodes).
_MULTILEVEL = igraph.GraphBase.community_multilevel


def louvain(
    count: int, edges: Sequence[tuple[int, int, float]], *, resolution: float = 1.0
) -> list[int]:
    """Each node's community, numbered 0.. in order of each community's first node.

    ``edges``: undirected ``(i, j, weight)`` with ``i != j``, weights > 0, each pair once.
    """
    return membership(
        count,
        [(i, j) for i, j, _ in edges],
        [weight for _, _, weight in edges],
        resolution=resolution,
    )


def membership(
    count: int,
    pairs: Sequence[tuple[int, int]],
    weights: Sequence[float],
    *,
    resolution: float = 1.0,
) -> list[int]:
    """:func:`louvain` over the pairs and their weights, as two lists.

    Lists, not numpy arrays: igraph copies either into its own vectors, and from a list of
    a few hundred tuples that is faster than through an array's buffer."""
    if not pairs:
        return list(range(count))
    graph = igraph.Graph(n=count, edges=pairs)
    _RANDOM.seed(_SEED)
    found: list[int] = _MULTILEVEL(graph, weights, False, resolution)
    # Renumbered by first node.
    first: dict[int, int] = {}
    for community in found:
        if community not in first:
            first[community] = len(first)
    return [first[community] for community in found]
