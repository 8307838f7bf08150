"""The traversal contract's values: what a caller asks, what the walk returns.

Every parameter has a range; a value outside it is clamped to the nearest bound and the
clamp is reported (:attr:`GraphMeta.clamped`), never rejected: a client that asks for depth
50 gets depth 10 and is told so. Type errors (a string for an Int) are the GraphQL layer's
``BAD_USER_INPUT`` before anything here runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TypeVar
from uuid import UUID

from fortemi.platform.isotext import IsoTimes

__all__ = [
    "GRAPH_VERSION",
    "EdgeColumns",
    "EdgeKind",
    "GraphEdge",
    "GraphMeta",
    "GraphNode",
    "GraphParams",
    "GraphRequest",
    "Neighbourhood",
    "NeighbourhoodColumns",
    "NodeColumns",
    "clamp",
]

GRAPH_VERSION = "v1"

_N = TypeVar("_N", int, float)
_T = TypeVar("_T")

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
    # Which reader walked: "segment" (the memory's links in RAM) or "statement" (the
    # recursive SQL); the answer is the same either way.
    path: str = "statement"


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    version: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    meta: GraphMeta


# The same values column by column: one sequence per field, item i of each describing the
# i-th node (edge). The walk's rows are decoded this way and the GraphQL layer completes its
# lists from the columns directly; building a GraphNode per row that is read once, then a
# GraphQL object from it, then the response dict, was most of a request's Python time.


@dataclass(frozen=True, slots=True)
class NodeColumns:
    id: Sequence[UUID]
    title: Sequence[str]
    depth: Sequence[int]
    archived: Sequence[bool]
    created_at: Sequence[datetime]
    updated_at: Sequence[datetime]
    # None where communities were not computed, as in GraphNode.
    community: Sequence[int | None]
    community_label: Sequence[str | None]
    community_confidence: Sequence[float | None]

    def __len__(self) -> int:
        return len(self.id)

    def rows(self) -> list[GraphNode]:
        return list(
            map(
                GraphNode,
                self.id,
                self.title,
                self.depth,
                self.archived,
                self.created_at,
                self.updated_at,
                self.community,
                self.community_label,
                self.community_confidence,
            )
        )


@dataclass(frozen=True, slots=True)
class EdgeColumns:
    source: Sequence[UUID]
    target: Sequence[UUID]
    kind: Sequence[EdgeKind]
    score: Sequence[float]
    rank: Sequence[int | None]
    set_id: Sequence[int | None]
    model: Sequence[str | None]
    computed_at: Sequence[datetime]
    bidirectional: Sequence[bool]
    # Each end's index in the neighbourhood's node order, when the reader knows it (the
    # walk does): its consumers then index lists rather than hash a UUID per end.
    source_at: Sequence[int] | None = None
    target_at: Sequence[int] | None = None

    def __len__(self) -> int:
        return len(self.source)

    def rows(self) -> list[GraphEdge]:
        return list(
            map(
                GraphEdge,
                self.source,
                self.target,
                self.kind,
                self.score,
                self.rank,
                self.set_id,
                self.model,
                self.computed_at,
                self.bidirectional,
            )
        )

    def select(self, keep: Sequence[int]) -> EdgeColumns:
        """The edges at the indexes ``keep``, in that order."""

        def pick(column: Sequence[_T]) -> list[_T]:
            return [column[i] for i in keep]

        computed_at = self.computed_at

        return EdgeColumns(
            pick(self.source),
            pick(self.target),
            pick(self.kind),
            pick(self.score),
            pick(self.rank),
            pick(self.set_id),
            pick(self.model),
            IsoTimes(pick(computed_at.texts))
            if isinstance(computed_at, IsoTimes)
            else pick(computed_at),
            pick(self.bidirectional),
            None if self.source_at is None else pick(self.source_at),
            None if self.target_at is None else pick(self.target_at),
        )


@dataclass(frozen=True, slots=True)
class NeighbourhoodColumns:
    """A :class:`Neighbourhood` with its nodes and edges as columns."""

    version: str
    nodes: NodeColumns
    edges: EdgeColumns
    meta: GraphMeta

    def rows(self) -> Neighbourhood:
        return Neighbourhood(
            self.version, tuple(self.nodes.rows()), tuple(self.edges.rows()), self.meta
        )
