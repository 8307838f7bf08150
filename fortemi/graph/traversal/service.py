"""A note's neighbourhood: the one traversal contract (``graph`` in GraphQL, the picture).

Contract, for ``neighbourhood(memory, start, request, visibility)``:

* the parameters are clamped into range (:func:`~fortemi.graph.traversal.models.clamp`),
  and each clamp is reported in the meta;
* the start must be a live note the caller may read, else :class:`NotFound` (an unknown and
  an unreadable note give the same answer);
* nodes are the readable live notes within ``depth`` hops over traversable links (explicit
  and wiki always, semantic unless pruned, each at least ``minScore`` once normalised), in
  BFS order: depth, then the strongest link from the previous level, then id; the first
  ``maxNodes`` are returned, so truncation is stable. Unreadable notes are neither walked
  through nor counted;
* edges are the traversable links among the returned nodes, one per (unordered pair, kind);
  with ``maxEdgesPerNode = k`` a pair is kept when it is among the k strongest of either end
  (so the walk's own edges always are);
* communities are Louvain's on the returned sub-graph (:mod:`.communities`).

Two readers give that answer: the memory's traversal segment (:mod:`.segment`, the links
held in RAM by this process, checked in the query's snapshot) when it is ready, current
and the walk has no ``maxEdgesPerNode``, else the recursive statement
(:mod:`.repository`); ``meta.path`` says which.
"""

from __future__ import annotations

from uuid import UUID

import numpy as np

from fortemi.graph.traversal.communities import ConceptLabels, assign_communities
from fortemi.graph.traversal.models import (
    GRAPH_VERSION,
    EdgeColumns,
    GraphMeta,
    GraphParams,
    GraphRequest,
    Neighbourhood,
    NeighbourhoodColumns,
    NodeColumns,
    clamp,
)
from fortemi.graph.traversal.repository import TraversalRepository, WalkResult
from fortemi.graph.traversal.segment import KINDS, GraphSegment
from fortemi.graph.traversal.segments import GraphSegments
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import NotFound
from fortemi.platform.isotext import IsoTimes
from fortemi.platform.notes.models import NoteVisibility
from fortemi.platform.snapshots import Snapshot

__all__ = ["TraversalService"]


def _reasons(params: GraphParams, walk: WalkResult, edges: int, dropped: int) -> list[str]:
    reasons = []
    if walk.cut:
        returned, found = len(walk.nodes), walk.found
        if walk.reached < params.depth:
            reasons.append(
                f"max_nodes limit: {returned} of at least {found} nodes returned "
                f"(the walk stopped at depth {walk.reached} of {params.depth})"
            )
        else:
            reasons.append(f"max_nodes limit: {returned} of {found} nodes returned")
    if dropped:
        reasons.append(
            f"max_edges_per_node limit: {edges - dropped} of {edges} edges among the returned "
            f"nodes kept (each node's {params.max_edges_per_node} strongest neighbours)"
        )
    return reasons


class TraversalService:
    """Reads a note's neighbourhood in one memory transaction."""

    def __init__(
        self,
        db: Database,
        *,
        gamma: float = 1.0,
        concepts: ConceptLabels | None = None,
        segment_links: int = 0,
    ) -> None:
        """``segment_links``: the most links this process holds in traversal segments
        (:mod:`.segments`; 0: every walk is the recursive statement)."""
        self._db = db
        self._gamma = gamma
        self._concepts = concepts
        self._repository = TraversalRepository()
        self.segments = GraphSegments(db, gamma=gamma, budget=segment_links)

    async def close(self) -> None:
        """Stop the segment builds under way."""
        await self.segments.close()

    async def neighbourhood(
        self,
        memory: str,
        start: UUID,
        request: GraphRequest,
        *,
        visibility: NoteVisibility | None,
        communities: bool = True,
        labels: bool = True,
    ) -> Neighbourhood:
        """``communities`` off skips Louvain (every node's community stays None) and
        ``labels`` off the vocabulary reads (labels stay None): for a caller that asks for
        neither."""
        found = await self.columns(
            memory,
            start,
            request,
            visibility=visibility,
            communities=communities,
            labels=labels,
        )
        return found.rows()

    async def columns(
        self,
        memory: str,
        start: UUID,
        request: GraphRequest,
        *,
        visibility: NoteVisibility | None,
        communities: bool = True,
        labels: bool = True,
    ) -> NeighbourhoodColumns:
        """:meth:`neighbourhood` with its nodes and edges column by column, as the walk
        decodes them: for a caller that turns them into something else (the GraphQL
        response) without an object per row in between."""
        params, clamped = clamp(request)
        repository = self._repository
        k = params.max_edges_per_node
        concepts = self._concepts if communities and labels else None
        # One transaction on one connection for every read, the vocabulary's included:
        # each is one round trip, where a second connection cost a transaction of its own.
        # Read-only, and the answer does not wait for its COMMIT (Database.memory_read).
        # The segment path answers walks without maxEdgesPerNode (the statement ranks each
        # node's neighbours for those); it gives way to the statement whenever the graph
        # changed since its snapshot, in the same transaction.
        segment = self.segments.current(memory) if k is None else None
        async with self._db.memory_read(memory) as conn:
            walk = None
            if segment is not None:
                walk = await self._segment_walk(
                    conn, memory, segment, start, params, visibility, concepts is not None
                )
            if walk is None:
                walk = await repository.walk(
                    conn,
                    start,
                    depth=params.depth,
                    max_nodes=params.max_nodes,
                    min_score=params.min_score,
                    max_edges_per_node=k,
                    gamma=self._gamma,
                    visibility=visibility,
                    # Community labels need the nodes' concepts: read in the walk's round trip.
                    concepts=concepts is not None,
                )
            if walk is None:
                raise NotFound(f"No note {start} in this memory", id=str(start))
            ids = list(walk.nodes.id)
            every = walk.edges
            kept = (
                None
                if k is None
                else await repository.kept_pairs(
                    conn,
                    ids,
                    k=k,
                    min_score=params.min_score,
                    gamma=self._gamma,
                    visibility=visibility,
                )
            )
            edges = (
                every
                if kept is None
                else every.select(
                    [
                        i
                        for i, (a, b) in enumerate(zip(every.source, every.target, strict=True))
                        if ((a, b) if a < b else (b, a)) in kept
                    ]
                )
            )
            nodes = walk.nodes
            if communities:
                nodes = await assign_communities(
                    memory,
                    nodes,
                    edges,
                    concepts,
                    carried=walk.concepts,
                    known_labels=walk.labels,
                    labels=labels,
                    conn=conn,
                )
        dropped = len(every) - len(edges)
        meta = GraphMeta(
            total_nodes=walk.found,
            total_edges=len(every) + walk.cut_edges,
            truncated_nodes=walk.found - len(nodes),
            truncated_edges=dropped + walk.cut_edges,
            totals_exact=not walk.cut or walk.reached >= params.depth,
            params=params,
            clamped=clamped,
            reasons=tuple(_reasons(params, walk, len(every), dropped)),
            path=walk.path,
        )
        return NeighbourhoodColumns(GRAPH_VERSION, nodes, edges, meta)

    async def _segment_walk(
        self,
        conn: Connection,
        memory: str,
        segment: GraphSegment,
        start: UUID,
        params: GraphParams,
        visibility: NoteVisibility | None,
        concepts: bool,
    ) -> WalkResult | None:
        """The walk from ``segment``, or None when the statement must answer: the start is
        not in it (a note made since) or not readable as it knows it (the statement says
        NOT_FOUND, or finds it made readable since), or the query's snapshot sees a change
        the segment's did not, or does not see everything the segment's saw."""
        number = segment.index.get(start)
        readable = segment.readable(visibility)
        if number is None or not readable[number]:
            return None
        walk = segment.walk(
            number,
            readable,
            depth=params.depth,
            max_nodes=params.max_nodes,
            min_score=params.min_score,
        )
        node_list = walk.nodes.tolist()
        ids = list(map(segment.ids.__getitem__, node_list))
        read = await self._repository.segment_read(
            conn,
            ids,
            since=str(segment.snapshot),
            xmin=segment.snapshot.xmin,
            visibility=visibility,
            concepts=concepts,
        )
        if (
            read.changed
            or read.relation != segment.relation
            or not segment.snapshot.precedes(Snapshot.parse(read.snapshot))
            or read.ids != ids
        ):
            self.segments.stale(memory, segment)
            return None
        self.segments.hits += 1
        edges = segment.edges(walk.nodes, params.min_score)
        at = np.empty(len(segment.ids), dtype=np.int64)
        at[walk.nodes] = np.arange(len(node_list))
        rows = edges.rows
        sources_at = at[edges.sources].tolist()
        targets_at = at[segment.row_target[rows]].tolist()
        models, stamps = segment.models, segment.computed
        unset = (None,) * len(ids)
        return WalkResult(
            nodes=NodeColumns(
                id=ids,
                title=read.titles,
                depth=walk.depths,
                archived=read.archived,
                created_at=IsoTimes(read.created),
                updated_at=IsoTimes(read.updated),
                community=unset,
                community_label=unset,
                community_confidence=unset,
            ),
            edges=EdgeColumns(
                source=list(map(ids.__getitem__, sources_at)),
                target=list(map(ids.__getitem__, targets_at)),
                kind=list(map(KINDS.__getitem__, segment.row_kind[rows].tolist())),
                score=segment.row_score[rows].tolist(),
                rank=[None if r < 0 else r for r in segment.row_rank[rows].tolist()],
                set_id=[None if s < 0 else s for s in segment.row_set[rows].tolist()],
                model=list(map(models.__getitem__, segment.row_model[rows].tolist())),
                computed_at=IsoTimes(
                    list(map(stamps.__getitem__, segment.row_computed[rows].tolist()))
                ),
                bidirectional=edges.bidirectional.tolist(),
                source_at=sources_at,
                target_at=targets_at,
            ),
            found=walk.found,
            cut=walk.cut,
            reached=walk.reached,
            cut_edges=walk.cut_edges,
            concepts=read.concepts,
            labels=read.labels,
            path="segment",
        )
