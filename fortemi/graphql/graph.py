"""``graph``: a note's neighbourhood, the one traversal contract (see the README's
"Traversal").

Out-of-range numbers are clamped and reported in ``meta``, never refused; a value of the
wrong type is refused by GraphQL's own coercion as ``BAD_USER_INPUT``. The start must be a
live note the caller may read, else ``NOT_FOUND``; the caller's read scope is a predicate
inside the walk, so unreadable notes are neither shown, walked through, nor counted. The
read scope is decided (and audited) once, as for note lists and search; its audit write
commits while the walk runs, and the answer waits for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import Annotated
from uuid import UUID

import strawberry
from strawberry.types.nodes import SelectedField, Selection

from fortemi.graph import traversal as model
from fortemi.graphql.context import Info
from fortemi.graphql.flat import flat
from fortemi.platform.ids import parse_note_id, to_global_id

__all__ = ["GraphQuery"]


@strawberry.enum(description="What made a link")
class GraphEdgeType(Enum):
    SEMANTIC = "semantic"
    EXPLICIT = "explicit"
    WIKI = "wiki"


@flat
@strawberry.type(description="A note in a neighbourhood")
class GraphNode:
    id: strawberry.ID = strawberry.field(description="The note's global id")
    title: str
    depth: int = strawberry.field(description="Hops from the start note (0 for the start)")
    archived: bool
    created_at: datetime
    updated_at: datetime
    community: int = strawberry.field(
        description="Louvain community on the returned sub-graph; 0 is the largest"
    )
    community_label: str | None = strawberry.field(
        description="The concept most of the community's notes carry (preferred label)"
    )
    community_confidence: float = strawberry.field(
        description="Share of the node's weighted degree inside its community (isolated: 1)"
    )


@flat
@strawberry.type(
    description="A link between two returned notes: one per pair and kind; a pair linked "
    "both ways is one bidirectional edge in its stronger direction"
)
class GraphEdge:
    source: strawberry.ID
    target: strawberry.ID
    edge_type: GraphEdgeType
    score: float = strawberry.field(
        description="0..1; semantic scores min-max normalised over the memory (then ^gamma)"
    )
    rank: int | None = strawberry.field(description="Rank among the source's automatic links")
    embedding_set: int | None = strawberry.field(description="The embedding set (semantic)")
    model: str | None = strawberry.field(description="The embedding model (semantic)")
    computed_at: datetime
    bidirectional: bool


@strawberry.type(description="The parameters the walk ran with, after clamping")
class GraphParameters:
    depth: int
    max_nodes: int
    min_score: float
    max_edges_per_node: int | None


@strawberry.type(description="What was found, what was left out, and why")
class GraphMeta:
    total_nodes: int = strawberry.field(
        description="Readable notes found before maxNodes truncation, the start included"
    )
    total_edges: int = strawberry.field(
        description="Edges among the returned nodes before maxEdgesPerNode, plus those the "
        "walk saw into nodes maxNodes left out"
    )
    truncated_nodes: int
    truncated_edges: int
    totals_exact: bool = strawberry.field(
        description="False when maxNodes stopped the walk before the last level: the totals "
        "are then lower bounds"
    )
    parameters: GraphParameters
    clamped: list[str] = strawberry.field(description="Each parameter moved into its range")
    truncation_reasons: list[str]


@strawberry.type(description="A note's neighbourhood over explicit, wiki and semantic links")
class NoteGraph:
    graph_version: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    meta: GraphMeta


_EDGE_TYPES = {kind: GraphEdgeType(kind.value) for kind in model.EdgeKind}


def _node(node: model.GraphNode, gid: str) -> GraphNode:
    return GraphNode(
        id=strawberry.ID(gid),
        title=node.title,
        depth=node.depth,
        archived=node.archived,
        created_at=node.created_at,
        updated_at=node.updated_at,
        community=node.community or 0,
        community_label=node.community_label,
        community_confidence=1.0
        if node.community_confidence is None
        else node.community_confidence,
    )


def _edge(edge: model.GraphEdge, gids: dict[UUID, str]) -> GraphEdge:
    return GraphEdge(
        source=strawberry.ID(gids[edge.source]),
        target=strawberry.ID(gids[edge.target]),
        edge_type=_EDGE_TYPES[edge.kind],
        score=edge.score,
        rank=edge.rank,
        embedding_set=edge.set_id,
        model=edge.model,
        computed_at=edge.computed_at,
        bidirectional=edge.bidirectional,
    )


def _meta(meta: model.GraphMeta) -> GraphMeta:
    params = meta.params
    return GraphMeta(
        total_nodes=meta.total_nodes,
        total_edges=meta.total_edges,
        truncated_nodes=meta.truncated_nodes,
        truncated_edges=meta.truncated_edges,
        totals_exact=meta.totals_exact,
        parameters=GraphParameters(
            depth=params.depth,
            max_nodes=params.max_nodes,
            min_score=params.min_score,
            max_edges_per_node=params.max_edges_per_node,
        ),
        clamped=list(meta.clamped),
        truncation_reasons=list(meta.reasons),
    )


_COMMUNITY_FIELDS = frozenset({"community", "communityConfidence", "communityLabel"})


def _node_fields(selections: Sequence[Selection], inside: bool = False) -> set[str]:
    """The field names selected on ``nodes`` (through fragments too), so the service skips
    what nobody asked for: Louvain and the concept reads are most of its Python time."""
    names: set[str] = set()
    for selection in selections:
        if not isinstance(selection, SelectedField):  # a fragment: same level
            names |= _node_fields(selection.selections, inside)
        elif inside:
            names.add(selection.name)
        elif selection.name == "nodes":
            names |= _node_fields(selection.selections, True)
    return names


@strawberry.type
class GraphQuery:
    @strawberry.field(
        description="A note's neighbourhood: nodes by depth, their links and communities. "
        "Out-of-range values are clamped and reported in meta."
    )
    async def graph(
        self,
        info: Info,
        note_id: strawberry.ID,
        depth: Annotated[int, strawberry.argument(description="Hops, 0..10")] = 2,
        max_nodes: Annotated[int, strawberry.argument(description="1..1000")] = 50,
        min_score: Annotated[
            float, strawberry.argument(description="Minimum normalised link score, 0..1")
        ] = 0.0,
        max_edges_per_node: Annotated[
            int | None,
            strawberry.argument(description="Follow each node's k strongest neighbours, 1..1000"),
        ] = None,
    ) -> NoteGraph:
        start = parse_note_id(note_id)
        asked = _node_fields([s for f in info.selected_fields for s in f.selections])
        # Read-only: the walk overlaps the audit write of the read scope, and nothing is
        # answered before that write commits (see Context.scoped_memory).
        memory, visibility = await info.context.scoped_memory(overlap=True)
        try:
            found = await info.context.services.traversal.neighbourhood(
                memory,
                start,
                model.GraphRequest(
                    depth=depth,
                    max_nodes=max_nodes,
                    min_score=min_score,
                    max_edges_per_node=max_edges_per_node,
                ),
                visibility=visibility,
                communities=not asked.isdisjoint(_COMMUNITY_FIELDS),
                labels="communityLabel" in asked,
            )
        finally:
            await info.context.recorded()
        # Every edge joins two returned nodes: each global id is encoded once.
        gids = {node.id: to_global_id("Note", node.id) for node in found.nodes}
        return NoteGraph(
            graph_version=found.version,
            nodes=[_node(node, gids[node.id]) for node in found.nodes],
            edges=[_edge(edge, gids) for edge in found.edges],
            meta=_meta(found.meta),
        )
