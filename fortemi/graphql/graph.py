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

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Annotated, cast
from uuid import UUID

import strawberry
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionNode,
)

from fortemi.graph import traversal as model
from fortemi.graphql.context import Info
from fortemi.graphql.flat import Columns, flat
from fortemi.platform.ids import parse_note_id, to_global_ids

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
    path: str = strawberry.field(
        description="Which reader walked: `segment` (the memory's links held in RAM by this "
        "server) or `statement` (the recursive SQL); the answer is the same either way"
    )


@strawberry.type(description="A note's neighbourhood over explicit, wiki and semantic links")
class NoteGraph:
    graph_version: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    meta: GraphMeta


_EDGE_TYPES = {kind: GraphEdgeType(kind.value) for kind in model.EdgeKind}


def _nodes(nodes: model.NodeColumns, gids: list[str]) -> Columns[GraphNode]:
    # Columns straight from the walk's: the ids as global ids, and the defaults a node
    # without communities shows (community 0, confidence 1).
    return Columns(
        GraphNode,
        {
            "id": gids,
            "title": nodes.title,
            "depth": nodes.depth,
            "archived": nodes.archived,
            "created_at": nodes.created_at,
            "updated_at": nodes.updated_at,
            "community": [c or 0 for c in nodes.community],
            "community_label": nodes.community_label,
            "community_confidence": [1.0 if c is None else c for c in nodes.community_confidence],
        },
        len(gids),
    )


def _edges(edges: model.EdgeColumns, ids: Sequence[UUID], gids: list[str]) -> Columns[GraphEdge]:
    types = _EDGE_TYPES
    if edges.source_at is not None and edges.target_at is not None:
        # Each end's index among the nodes: list indexing, no UUID hashed.
        sources = list(map(gids.__getitem__, edges.source_at))
        targets = list(map(gids.__getitem__, edges.target_at))
    else:
        by_id = dict(zip(ids, gids, strict=True))
        sources = list(map(by_id.__getitem__, edges.source))
        targets = list(map(by_id.__getitem__, edges.target))
    return Columns(
        GraphEdge,
        {
            "source": sources,
            "target": targets,
            "edge_type": [types[kind] for kind in edges.kind],
            "score": edges.score,
            "rank": edges.rank,
            "embedding_set": edges.set_id,
            "model": edges.model,
            "computed_at": edges.computed_at,
            "bidirectional": edges.bidirectional,
        },
        len(edges),
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
        path=meta.path,
    )


_COMMUNITY_FIELDS = frozenset({"community", "communityConfidence", "communityLabel"})


def _node_fields(
    selections: Iterable[SelectionNode],
    fragments: Mapping[str, FragmentDefinitionNode],
    inside: bool = False,
) -> set[str]:
    """The field names selected on ``nodes`` (through fragments too), so the service skips
    what nobody asked for: Louvain and the concept reads are most of its Python time.

    Read from graphql-core's syntax tree: strawberry's ``info.selected_fields`` converts
    the whole selection (every field of every node and edge) into its own objects first."""
    names: set[str] = set()
    for selection in selections:
        if isinstance(selection, FieldNode):
            if inside:
                names.add(selection.name.value)
            elif selection.name.value == "nodes" and selection.selection_set is not None:
                names |= _node_fields(selection.selection_set.selections, fragments, True)
            continue
        # A fragment: same level.
        if isinstance(selection, FragmentSpreadNode):
            fragment = fragments.get(selection.name.value)
            found = None if fragment is None else fragment.selection_set
        else:
            found = cast(InlineFragmentNode, selection).selection_set
        if found is not None:
            names |= _node_fields(found.selections, fragments, inside)
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
        raw = info._raw_info  # graphql-core's resolve info, which strawberry keeps
        asked = _node_fields(
            [
                selection
                for node in raw.field_nodes
                if node.selection_set is not None
                for selection in node.selection_set.selections
            ],
            raw.fragments,
        )
        # Read-only: the walk overlaps the audit write of the read scope, and nothing is
        # answered before that write commits (see Context.scoped_memory).
        memory, visibility = await info.context.scoped_memory(overlap=True)
        try:
            found = await info.context.services.traversal.columns(
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
        # Every edge joins two returned nodes: each global id is encoded once, all of them
        # in one pass.
        # The lists go out as columns, completed by fortemi.graphql.flat without an object
        # per node or edge (the ordinary path, if it must answer, builds them).
        ids = found.nodes.id
        node_gids = to_global_ids("Note", ids)
        return NoteGraph(
            graph_version=found.version,
            nodes=cast(list[GraphNode], _nodes(found.nodes, node_gids)),
            edges=cast(list[GraphEdge], _edges(found.edges, ids, node_gids)),
            meta=_meta(found.meta),
        )
