"""The traversal contract's values: what a caller asks, what the walk returns.

Every parameter has a range; a value outside it is clamped to the nearest bound and the
clamp is reported (:attr:`GraphMeta.clamped`), never rejected: a client that asks for depth
50 gets depth 10 and is told so. Type errors (a string for an Int) are the GraphQL layer's
``BAD_USER_INPUT`` before anything here runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TypeVar
from uuid import UUID

__all__ = [
    "GRAPH_VERSION",
    "EdgeKind",
    "GraphEdge",
    "GraphMeta",
    "GraphNode",
    "GraphParams",
    "GraphRequest",
    "Neighbourhood",
    "clamp",
]

GRAPH_VERSION = "v1"

_N = TypeVar("_N", int, float)

DEPTH = (0, 10)
MAX_NODES = (1, 1000)
MIN_SCORE = (0.0, 1.0)
MAX_EDGES_PER_NODE = (1, 1000)


class EdgeKind(StrEnum):
    SEMANTIC = "semantic"
    EXPLICIT = "explicit"
    WIKI = "wiki"


@dataclass(frozen=True, slots=True)
class GraphRequest:
    """The parameters as the caller sent them, before clamping."""

    depth: int = 2
    max_nodes: int = 50
    min_score: float = 0.0
    max_edges_per_node: int | None = None


@dataclass(frozen=True, slots=True)
class GraphParams:
    """The parameters the walk ran with: each within its range."""

    depth: int
    max_nodes: int
    min_score: float
    max_edges_per_node: int | None


def _clamped(name: str, value: _N, bounds: tuple[_N, _N], notes: list[str]) -> _N:
    low, high = bounds
    if value < low:
        notes.append(f"{name}: {value} is below the minimum {low}; {low} used")
        return low
    if value > high:
        notes.append(f"{name}: {value} is above the maximum {high}; {high} used")
        return high
    return value


def clamp(request: GraphRequest) -> tuple[GraphParams, tuple[str, ...]]:
    """The effective parameters and one sentence per value that was moved into range."""
    notes: list[str] = []
    k = request.max_edges_per_node
    params = GraphParams(
        depth=_clamped("depth", request.depth, DEPTH, notes),
        max_nodes=_clamped("maxNodes", request.max_nodes, MAX_NODES, notes),
        min_score=_clamped("minScore", float(request.min_score), MIN_SCORE, notes),
        max_edges_per_node=None
        if k is None
        else _clamped("maxEdgesPerNode", k, MAX_EDGES_PER_NODE, notes),
    )
    return params, tuple(notes)


@dataclass(frozen=True, slots=True)
class GraphNode:
    id: UUID
    title: str
    depth: int  # hops from the start note
    archived: bool
    created_at: datetime
    updated_at: datetime
    # Louvain on the returned sub-graph (see the service); None only before it ran.
    community: int | None = None
    community_label: str | None = None
    community_confidence: float | None = None


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One relation between two returned notes: one edge per (unordered pair, kind).

    ``source``/``target`` are the stored link's direction; when the pair is linked both
    ways with the same kind (semantic links are always written both ways) the edge is
    ``bidirectional`` and carries the stronger direction (ties: the smaller source id).
    ``score`` is normalised (semantic) or as stored (explicit, wiki).
    """

    source: UUID
    target: UUID
    kind: EdgeKind
    score: float
    rank: int | None
    set_id: int | None
    model: str | None
    computed_at: datetime
    bidirectional: bool


@dataclass(frozen=True, slots=True)
class GraphMeta:
    total_nodes: int  # readable notes found within depth and minScore, the start included
    total_edges: int  # edges among the returned nodes before maxEdgesPerNode, plus the
    # edges the walk saw into nodes that maxNodes left out
    truncated_nodes: int
    truncated_edges: int
    totals_exact: bool  # False: maxNodes stopped the walk before the last level
    params: GraphParams
    clamped: tuple[str, ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    version: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    meta: GraphMeta
