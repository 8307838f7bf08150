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
"""

from __future__ import annotations

from uuid import UUID

from fortemi.graph.traversal.communities import ConceptLabels, assign_communities
from fortemi.graph.traversal.models import (
    GRAPH_VERSION,
    GraphMeta,
    GraphParams,
    GraphRequest,
    Neighbourhood,
    NeighbourhoodColumns,
    clamp,
)
from fortemi.graph.traversal.repository import TraversalRepository, WalkResult
from fortemi.platform.database import Database
from fortemi.platform.errors import NotFound
from fortemi.platform.notes.models import NoteVisibility

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
        self, db: Database, *, gamma: float = 1.0, concepts: ConceptLabels | None = None
    ) -> None:
        self._db = db
        self._gamma = gamma
        self._concepts = concepts
        self._repository = TraversalRepository()

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
        async with self._db.memory_read(memory) as conn:
            walk = await repository.walk(
                conn,
                start,
                depth=params.depth,
                max_nodes=params.max_nodes,
                min_score=params.min_score,
                max_edges_per_node=k,
                gamma=self._gamma,
                visibility=visibility,
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
                    carried=None
                    if concepts is None
                    else await concepts.concept_ids(memory, ids, conn=conn),
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
        )
        return NeighbourhoodColumns(GRAPH_VERSION, nodes, edges, meta)
