"""The traversal's SQL: one recursive walk over ``note_link``, then the returned nodes' edges.

Links are undirected for traversal: each level looks a frontier's ids up in both the
primary key ``(source_id, kind, target_id)`` and ``note_link_target_idx (target_id, kind)``.
A link is traversable when it is explicit or wiki (always), or semantic and not pruned by
PFNET; and when its normalised score is at least ``minScore``.

Normalisation happens here, at read time: a semantic score ``s`` becomes
``((s - min) / (max - min)) ** gamma`` over the memory's semantic links, whose min and max
are two probes of ``note_link_kind_score_idx``; ``max = min`` gives 1.0. Explicit and wiki
links keep their score.

**The walk** (:data:`_WALK`) is one ``WITH RECURSIVE`` statement whose working row is a
whole level: ``(depth, frontier, seen, found, cut)``. Carrying the level as arrays rather
than one row per path is what keeps it bounded: a recursive CTE only sees the previous
iteration's rows, so a row-per-node walk cannot tell a node reached before from a new one
and re-expands every path (``degree ** depth`` rows). Per level, in one lateral subquery:

1. the frontier's traversable links, both directions;
2. neighbours already seen are dropped (a hash anti-join on ``seen``), and the rest must
   be readable, live notes (the caller's visibility predicate is in the join, so
   unreadable notes are never expanded nor counted); with ``maxEdgesPerNode = k`` each
   frontier node first keeps its k strongest readable neighbours, seen or not (a pair
   ranks by its strongest link; ties by id), so readability is checked per link there;
3. each new node's strongest link from the frontier is its score at this level;
4. the new nodes are ordered by their strongest link from the frontier, then id, and only
   as many as ``maxNodes`` leaves room for are kept. That is the cap: at most ``maxNodes``
   nodes are ever expanded, however dense the graph.

When a level has more candidates than room, the walk stops there (``cut``): the order is
BFS by depth, then score, then id, so every later node would come after the ones left out.
The totals then count every node up to that level (exact when it is the last level, a
lower bound otherwise), and the edges from the frontier into the nodes left out.

**Edges** are the traversable links among the returned nodes, read by the same statement
from the last level's ``seen`` (one round trip for the whole neighbourhood, answered as one
row: the totals, then one array per node column in BFS order, then one array per edge
column), one edge per (unordered pair, kind): a pair linked
both ways is ``bidirectional`` and comes in its stronger direction (ties: the smaller
source id; uuids order bytewise, as Python's ``UUID`` does), ordered by the pair then kind.
Merging them here halves the rows sent and decoded (semantic links are stored both ways).
:data:`_EDGES` is the same read for ids a caller already has; with ``k``,
:data:`_KEPT_PAIRS` says which pairs are among the k strongest of either end.

The walk and the edges are index-only scans of the links migration's two partial covering
indexes (``note_link_walk_source_idx`` and ``note_link_walk_target_idx``), whose predicate
is :data:`_TRAVERSABLE` written the same way: keep the two in step, or the planner can no
longer prove the index applies and goes back to reading the heap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from fortemi.graph.traversal.models import EdgeColumns, EdgeKind, GraphEdge, NodeColumns
from fortemi.graph.vocabulary.repository import CONCEPT_LABELS_SQL, NOTE_CONCEPTS_SQL
from fortemi.platform.database import Connection
from fortemi.platform.isotext import IsoTimes, iso_text_sql
from fortemi.platform.notes.models import NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import note_filter_where
from fortemi.platform.sql import Query, Where

__all__ = [
    "SegmentRead",
    "TraversalRepository",
    "WalkResult",
    "edges_statement",
    "walk_statement",
]

# ``note_link``'s columns are declared once, as ``NOTE_LINK`` in fortemi.graph.links.repository.
# The walk stays hand-composed SQL (its fragments are spliced per level, for speed), so
# rather than splice select lists here, tests/unit/graph/test_link_columns.py checks every
# ``l.<column>`` of these statements against that declaration.

_KINDS = {kind.value: kind for kind in EdgeKind}

# Min and max of the memory's semantic scores; span NULL when they are equal (all 1.0).
_BOUNDS = """
bounds AS MATERIALIZED (
    SELECT lo, CASE WHEN hi > lo THEN hi - lo END AS span
    FROM (SELECT (SELECT score FROM note_link WHERE kind = 'semantic'
                  ORDER BY score LIMIT 1)::float8 AS lo,
                 (SELECT score FROM note_link WHERE kind = 'semantic'
                  ORDER BY score DESC LIMIT 1)::float8 AS hi) AS m
)"""


def _normalised(alias: str) -> str:
    """A link's normalised score, from ``{alias}.kind`` and ``{alias}.score`` (a raw score)."""
    return (
        f"(CASE WHEN {alias}.kind <> 'semantic' THEN {alias}.score::float8"
        " WHEN b.span IS NULL THEN 1.0::float8"
        f" ELSE power(greatest({alias}.score::float8 - b.lo, 0.0) / b.span, :gamma::float8) END)"
    )


_NORMALISED = _normalised("l")
_TRAVERSABLE = "(l.kind <> 'semantic' OR NOT l.pruned)"

# The traversable links of ``{ids}`` in either direction, as (f, other, kind, raw score)
# with ``f`` in ``{ids}``. The walk's two covering indexes answer both halves.
_INCIDENT = """
SELECT l.source_id AS f, l.target_id AS other, l.kind, l.score
FROM note_link l
WHERE l.source_id = ANY({ids}) AND {traversable}
UNION ALL
SELECT l.target_id, l.source_id, l.kind, l.score
FROM note_link l
WHERE l.target_id = ANY({ids}) AND {traversable}
""".replace("{traversable}", _TRAVERSABLE)

# Normalisation is monotonic in the raw score for a given kind (a min-max, then a power
# with gamma > 0), so the strongest normalised link of a (f, other, kind) is the normalised
# strongest raw one: the links are grouped first and only the groups normalised, once each.
# Normalising every link read cost a tenth of the walk. A semantic link is stored both ways,
# so (f, other, kind) can come twice.
_PER_KIND = """
SELECT q.f, q.other, {norm} AS s
FROM (
    SELECT a.f, a.other, a.kind, max(a.score) AS score
    FROM ({incident}) AS a
    {unseen}
    GROUP BY a.f, a.other, a.kind
) AS q
CROSS JOIN bounds b
""".replace("{norm}", _normalised("q"))


def _per_kind(ids: str, unseen: str = "") -> str:
    return _PER_KIND.replace("{incident}", _INCIDENT.replace("{ids}", ids)).replace(
        "{unseen}", unseen
    )


# Each (frontier node, neighbour) pair once, over traversable links of either direction to
# readable live notes, with its strongest normalised score and how many kinds link it; with
# k, only each frontier node's k strongest neighbours. ``{ids}`` is the frontier.
_NEIGHBOURS = """
SELECT r.f, r.other, r.best, r.kinds FROM (
    SELECT p.f, p.other, max(p.s) AS best, count(*)::int AS kinds,
           row_number() OVER (PARTITION BY p.f ORDER BY max(p.s) DESC, p.other) AS r
    FROM ({per_kind}) AS p
    JOIN note ON note.id = p.other
    WHERE p.s >= :min_score::float8 AND {visible}
    GROUP BY p.f, p.other
) AS r
WHERE :k::int IS NULL OR r.r <= :k::int
"""


def _neighbours(ids: str) -> str:
    return _NEIGHBOURS.replace("{per_kind}", _per_kind(ids))


# The new nodes of a level, one row each: (other, best, edges), ``edges`` counting the
# (frontier node, kind) links into it. With k, each frontier node's k strongest neighbours
# are ranked among all its readable ones, seen or not, before the seen are dropped.
_RANKED_CANDIDATES = """
SELECT k.other, max(k.best) AS best, sum(k.kinds)::int AS edges
FROM ({neighbours}) AS k
LEFT JOIN unnest(w.seen) AS s(id) ON s.id = k.other
WHERE s.id IS NULL
GROUP BY k.other
""".replace("{neighbours}", _neighbours("w.frontier"))

# Without k nothing needs ranking per frontier node, so the seen are dropped first (a hash
# anti-join on the links read) and readability is checked once per new node rather than once
# per link. Grouped by (f, other, kind), then by the new node: both hash aggregates, where a
# ``count(DISTINCT (f, kind))`` made PostgreSQL sort every link row of the level.
_ALL_CANDIDATES = """
SELECT g.other, g.best, g.edges FROM (
    SELECT p.other, max(p.s) AS best, count(*)::int AS edges
    FROM ({per_kind}) AS p
    WHERE p.s >= :min_score::float8
    GROUP BY p.other
) AS g
JOIN note ON note.id = g.other
WHERE {visible}
""".replace(
    "{per_kind}",
    _per_kind(
        "w.frontier", "LEFT JOIN unnest(w.seen) AS s(id) ON s.id = a.other WHERE s.id IS NULL"
    ),
)

_WALK_TEMPLATE = """,
walk (depth, frontier, seen, found, cut, cut_edges) AS (
    SELECT 0, ARRAY[note.id], ARRAY[note.id], 1, false, 0
    FROM note WHERE note.id = :start::uuid AND {visible}
  UNION ALL
    SELECT w.depth + 1, nx.ids, w.seen || nx.ids, w.found + nx.total,
           nx.total > cardinality(nx.ids), nx.dropped_edges
    FROM walk AS w
    CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(c.other ORDER BY c.best DESC, c.other) FILTER (WHERE c.kept),
                        '{}'::uuid[]) AS ids,
               count(*)::int AS total,
               coalesce(sum(c.edges) FILTER (WHERE NOT c.kept), 0)::int AS dropped_edges
        FROM (
            SELECT g.other, g.best, g.edges,
                   row_number() OVER (ORDER BY g.best DESC, g.other)
                       <= :max_nodes::int - cardinality(w.seen) AS kept
            FROM ({candidates}) AS g
        ) AS c
    ) AS nx
    WHERE w.depth < :depth::int AND NOT w.cut AND cardinality(w.frontier) > 0
),
last AS (SELECT depth, seen, found, cut, cut_edges FROM walk ORDER BY depth DESC LIMIT 1),
edges AS ({edges}),
nodes AS (
    SELECT w.depth, u.ord, note.id, note.title, note.archived, note.created_at,
           note.updated_at
    FROM walk AS w
    CROSS JOIN LATERAL unnest(w.frontier) WITH ORDINALITY AS u(id, ord)
    JOIN note ON note.id = u.id
)
SELECT last.depth AS reached, last.found, last.cut, last.cut_edges, n.*, e.*{more}
FROM last
CROSS JOIN (
    SELECT array_agg(id ORDER BY depth, ord) AS ids,
           array_agg(title ORDER BY depth, ord) AS titles,
           array_agg(depth ORDER BY depth, ord) AS depths,
           array_agg(archived ORDER BY depth, ord) AS archived,
           array_agg({created_at} ORDER BY depth, ord) AS created,
           array_agg({updated_at} ORDER BY depth, ord) AS updated
    FROM nodes
) AS n
CROSS JOIN (
    SELECT array_agg(source_id ORDER BY lo, hi, kind) AS sources,
           array_agg(target_id ORDER BY lo, hi, kind) AS targets,
           array_agg(kind ORDER BY lo, hi, kind) AS kinds,
           array_agg(score ORDER BY lo, hi, kind) AS scores,
           array_agg(rank ORDER BY lo, hi, kind) AS ranks,
           array_agg(set_id ORDER BY lo, hi, kind) AS set_ids,
           array_agg(model ORDER BY lo, hi, kind) AS models,
           array_agg({computed_at} ORDER BY lo, hi, kind) AS computed,
           array_agg(bidirectional ORDER BY lo, hi, kind) AS bidirectional
    FROM edges
) AS e
"""


# The traversable links among ``{ids}``, one row per (unordered pair, kind) in its stronger
# direction, ordered by the pair then kind; ``{source}`` is what the links are joined to.
# Each (source, kind, target) is one row (the primary key), so a pair has at most two rows
# of a kind: ``lo -> hi`` and ``hi -> lo``. One sort, by the pair, kind, then score
# descending and source (``lo -> hi`` on a tie: the smaller source), serves the window that
# counts a pair's rows (its frame is the whole pair), DISTINCT ON, which keeps the first,
# and the arrays' ORDER BY, which PostgreSQL then reads presorted. Grouping each pair into
# FILTERed aggregates of both directions cost a third more.
_EDGE_ROWS = """
SELECT DISTINCT ON (e.lo, e.hi, e.kind)
       e.source_id, e.target_id, e.kind, e.score, e.rank, e.set_id, e.model, e.computed_at,
       count(*) OVER (PARTITION BY e.lo, e.hi, e.kind ORDER BY e.score DESC, e.source_id
                      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) = 2
           AS bidirectional,
       e.lo, e.hi
FROM (
    SELECT least(l.source_id, l.target_id) AS lo, greatest(l.source_id, l.target_id) AS hi,
           l.kind, l.source_id, l.target_id, {norm} AS score, l.rank, l.set_id, l.model,
           l.computed_at
    FROM {source}note_link l
    CROSS JOIN bounds b
    JOIN unnest({ids}) AS t(id) ON t.id = l.target_id
    WHERE l.source_id = ANY({ids}) AND {traversable}
      -- scores are within [0, 1]: at minScore 0 no link needs normalising twice
      AND (:min_score::float8 <= 0.0 OR {norm} >= :min_score::float8)
) AS e
ORDER BY e.lo, e.hi, e.kind, e.score DESC, e.source_id
"""


def _edge_rows(ids: str, source: str) -> str:
    return (
        _EDGE_ROWS.replace("{ids}", ids)
        .replace("{source}", source)
        .replace("{norm}", _NORMALISED)
        .replace("{traversable}", _TRAVERSABLE)
    )


# With concepts: the returned notes' concepts and those concepts' preferred labels, as the
# vocabulary reads them (its SQL, spliced in), after the edge columns.
_WITH_CONCEPTS = (
    "CROSS JOIN LATERAL ("
    + NOTE_CONCEPTS_SQL.replace("{ids}", "last.seen")
    + ") AS cn\nCROSS JOIN LATERAL ("
    + CONCEPT_LABELS_SQL.replace("{ids}", "last.seen")
    + ") AS cl\n"
)


def _walk(candidates: str, *, concepts: bool = False) -> Query:
    # Fixed fragments only: the statements are composed at import from the constants above.
    # The edges among the returned nodes are read in the same statement, from the last
    # level's ``seen``: one round trip for the whole neighbourhood. Its times come as the
    # text the GraphQL response carries (fortemi.platform.isotext): decoding a datetime
    # and formatting it back was a Python call each, ~750 a neighbourhood. With
    # ``concepts``, the nodes' concepts and their labels (for the communities' labels)
    # come in the same round trip too, rather than in two more.
    template = _WALK_TEMPLATE.replace("{more}", ", cn.*, cl.*" if concepts else "")
    if concepts:
        template += _WITH_CONCEPTS
    return Query(
        "".join(("WITH RECURSIVE", _BOUNDS, template))
        .replace("{candidates}", candidates)
        .replace("{edges}", _edge_rows("last.seen", "last CROSS JOIN "))
        .replace("{created_at}", iso_text_sql("created_at"))
        .replace("{updated_at}", iso_text_sql("updated_at"))
        .replace("{computed_at}", iso_text_sql("computed_at"))
    )


_WALK = _walk(_RANKED_CANDIDATES)
_WALK_ALL = _walk(_ALL_CANDIDATES)
_WALK_CONCEPTS = _walk(_RANKED_CANDIDATES, concepts=True)
_WALK_ALL_CONCEPTS = _walk(_ALL_CANDIDATES, concepts=True)

_EDGES = Query("".join(("WITH", _BOUNDS, "\n", _edge_rows(":ids::uuid[]", ""))))

_KEPT_PAIRS = Query(
    "".join(
        (
            "WITH",
            _BOUNDS,
            """
SELECT DISTINCT least(k.f, k.other) AS a, greatest(k.f, k.other) AS b
FROM (""",
            _neighbours(":ids::uuid[]"),
            """) AS k
JOIN unnest(:ids::uuid[]) AS t(id) ON t.id = k.other
""",
        )
    )
)


# The segment path's one statement (fortemi.graph.traversal.segments): in the query's own
# snapshot, whether any transaction the segment's snapshot did not see has changed the
# graph (migration 0016), and the returned notes' columns in the walk's order, each still
# live and readable (one missing or unreadable sends the query back to the walk), with the
# nodes' concepts and their labels when asked for. ``:xmin`` bounds the index range read:
# a transaction below the segment's xmin had finished when it was taken.
_SEGMENT_READ_TEMPLATE = """
SELECT pg_current_snapshot()::text AS snapshot,
       'graph_change'::regclass::oid::int8 AS relation,
       EXISTS (SELECT 1 FROM graph_change
               WHERE xid >= :xmin::text::xid8
                 AND NOT pg_visible_in_snapshot(xid, :since::text::pg_snapshot)) AS changed,
       n.*{more}
FROM (
    SELECT array_agg(note.id ORDER BY u.ord) AS ids,
           array_agg(note.title ORDER BY u.ord) AS titles,
           array_agg(note.archived ORDER BY u.ord) AS archived,
           array_agg({created_at} ORDER BY u.ord) AS created,
           array_agg({updated_at} ORDER BY u.ord) AS updated
    FROM unnest(:ids::uuid[]) WITH ORDINALITY AS u(id, ord)
    JOIN note ON note.id = u.id
    WHERE {visible}
) AS n
"""


def _segment_read(*, concepts: bool) -> Query:
    template = _SEGMENT_READ_TEMPLATE.replace("{more}", ", cn.*, cl.*" if concepts else "")
    if concepts:
        template += (
            "CROSS JOIN LATERAL ("
            + NOTE_CONCEPTS_SQL.replace("{ids}", ":ids::uuid[]")
            + ") AS cn\nCROSS JOIN LATERAL ("
            + CONCEPT_LABELS_SQL.replace("{ids}", ":ids::uuid[]")
            + ") AS cl\n"
        )
    return Query(
        template.replace("{created_at}", iso_text_sql("note.created_at")).replace(
            "{updated_at}", iso_text_sql("note.updated_at")
        )
    )


_SEGMENT_READ = _segment_read(concepts=False)
_SEGMENT_READ_CONCEPTS = _segment_read(concepts=True)


@dataclass(frozen=True, slots=True)
class SegmentRead:
    """What the segment path reads in the query's snapshot (see :data:`_SEGMENT_READ`)."""

    snapshot: str
    relation: int
    changed: bool
    ids: list[UUID]
    titles: list[str]
    archived: list[bool]
    created: list[str]
    updated: list[str]
    concepts: dict[UUID, frozenset[UUID]] | None
    labels: dict[UUID, str] | None


def _concepts(
    columns: Sequence[Any],
) -> tuple[dict[UUID, frozenset[UUID]], dict[UUID, str]]:
    """The nodes' concept ids (only the nodes that carry one) and those concepts' labels,
    from the vocabulary's four array columns."""
    notes, concept_ids, label_ids, label_texts = (v or [] for v in columns)
    grouped: dict[UUID, set[UUID]] = {}
    for note, concept in zip(notes, concept_ids, strict=True):
        grouped.setdefault(note, set()).add(concept)
    carried = {note: frozenset(found) for note, found in grouped.items()}
    return carried, dict(zip(label_ids, label_texts, strict=True))


@dataclass(frozen=True, slots=True)
class WalkResult:
    """The walk's nodes in BFS order (depth, score desc, id), the edges among them (as
    :meth:`TraversalRepository.links` reads them), and what it saw past them."""

    nodes: NodeColumns  # communities not yet assigned
    edges: EdgeColumns
    found: int  # readable nodes found, the returned ones included
    cut: bool  # maxNodes stopped the walk
    reached: int  # the depth of the last level the walk expanded to
    cut_edges: int  # edges from the frontier into the nodes left out at the cut
    # With concepts: the concept ids of each returned node that carries any, and those
    # concepts' labels.
    concepts: dict[UUID, frozenset[UUID]] | None = None
    labels: dict[UUID, str] | None = None
    path: str = "statement"  # or "segment": which reader walked


def _bound(query: Query, visibility: NoteVisibility | None, **values: Any) -> tuple[str, list[Any]]:
    """``query`` with ``{visible}`` replaced by the caller's read scope (and ``deleted_at IS
    NULL``), its values numbered after the statement's own binds."""
    where = note_filter_where(NoteFilter(visibility=visibility), Where(*query.args(values)))
    return query.sql.replace("{visible}", where.sql()), where.args


def walk_statement(
    start: UUID,
    *,
    depth: int,
    max_nodes: int,
    min_score: float,
    max_edges_per_node: int | None,
    gamma: float,
    visibility: NoteVisibility | None,
    concepts: bool = False,
) -> tuple[str, list[Any]]:
    """The walk's SQL and arguments (the benchmark runs it raw, beside the API);
    ``concepts`` adds the nodes' concepts and their labels to its row."""
    values = {
        "start": start,
        "depth": depth,
        "max_nodes": max_nodes,
        "min_score": min_score,
        "gamma": gamma,
    }
    if max_edges_per_node is None:
        return _bound(_WALK_ALL_CONCEPTS if concepts else _WALK_ALL, visibility, **values)
    query = _WALK_CONCEPTS if concepts else _WALK
    return _bound(query, visibility, k=max_edges_per_node, **values)


def edges_statement(
    ids: Sequence[UUID], *, min_score: float, gamma: float
) -> tuple[str, tuple[Any, ...]]:
    """The edges statement's SQL and arguments (the benchmark runs it raw)."""
    return _EDGES.sql, _EDGES.args(ids=list(ids), min_score=min_score, gamma=gamma)


class TraversalRepository:
    async def walk(
        self,
        conn: Connection,
        start: UUID,
        *,
        depth: int,
        max_nodes: int,
        min_score: float,
        max_edges_per_node: int | None,
        gamma: float,
        visibility: NoteVisibility | None,
        concepts: bool = False,
    ) -> WalkResult | None:
        """The walk from ``start``; None when the start is absent, deleted or unreadable.
        ``concepts``: with the nodes' concept ids and those concepts' labels."""
        sql, args = walk_statement(
            start,
            depth=depth,
            max_nodes=max_nodes,
            min_score=min_score,
            max_edges_per_node=max_edges_per_node,
            gamma=gamma,
            visibility=visibility,
            concepts=concepts,
        )
        row = await conn.fetchrow(sql, *args)
        if row is None:
            return None
        # One row: the walk's totals, then one array per node column (BFS order), then one
        # per edge column (NULL when there is no edge). Arrays rather than a row per node
        # and edge: asyncpg decodes them straight into lists, with no record per row, no
        # NULL-padded columns and no transposing; that halved the decoding's CPU.
        reached, found, cut, cut_edges, ids, titles, depths, archived, created, updated = row[:10]
        edges = row[10:19] if row[10] is not None else ([],) * 9
        sources, targets, kinds, scores, ranks, set_ids, models, computed, bidirectional = edges
        # Each end's index among the nodes, found once here for all who need it (the
        # communities, the response's global ids): a UUID's hash is computed anew at every
        # lookup. (Read in SQL, it made the planner, which cannot size an unnested array,
        # pick a nested loop over the nodes.)
        index = dict(zip(ids, range(len(ids)), strict=True))
        sources_at = list(map(index.__getitem__, sources))
        targets_at = list(map(index.__getitem__, targets))
        unset = (None,) * len(ids)
        carried: dict[UUID, frozenset[UUID]] | None = None
        labels: dict[UUID, str] | None = None
        if concepts:
            carried, labels = _concepts(row[19:23])
        return WalkResult(
            nodes=NodeColumns(
                id=ids,
                title=titles,
                depth=depths,
                archived=archived,
                created_at=IsoTimes(created),
                updated_at=IsoTimes(updated),
                community=unset,
                community_label=unset,
                community_confidence=unset,
            ),
            edges=EdgeColumns(
                source=sources,
                target=targets,
                kind=list(map(_KINDS.__getitem__, kinds)),
                score=scores,
                rank=ranks,
                set_id=set_ids,
                model=models,
                computed_at=IsoTimes(computed),
                bidirectional=bidirectional,
                source_at=sources_at,
                target_at=targets_at,
            ),
            found=found,
            cut=cut,
            reached=reached,
            cut_edges=cut_edges,
            concepts=carried,
            labels=labels,
        )

    async def segment_read(
        self,
        conn: Connection,
        ids: Sequence[UUID],
        *,
        since: str,
        xmin: int,
        visibility: NoteVisibility | None,
        concepts: bool,
    ) -> SegmentRead:
        """The segment path's statement for the walk's nodes ``ids``; ``since`` and
        ``xmin``: the segment's snapshot (its text) and that snapshot's xmin."""
        sql, args = _bound(
            _SEGMENT_READ_CONCEPTS if concepts else _SEGMENT_READ,
            visibility,
            ids=list(ids),
            since=since,
            xmin=str(xmin),
        )
        row = await conn.fetchrow(sql, *args)
        if row is None:
            raise RuntimeError("a SELECT without FROM returned no row")
        carried, labels = _concepts(row[8:12]) if concepts else (None, None)
        return SegmentRead(
            snapshot=row[0],
            relation=int(row[1]),
            changed=bool(row[2]),
            ids=list(row[3] or ()),
            titles=list(row[4] or ()),
            archived=list(row[5] or ()),
            created=list(row[6] or ()),
            updated=list(row[7] or ()),
            concepts=carried,
            labels=labels,
        )

    async def links(
        self, conn: Connection, ids: Sequence[UUID], *, min_score: float, gamma: float
    ) -> list[GraphEdge]:
        """The traversable links among ``ids`` scoring at least ``min_score``: one edge per
        (unordered pair, kind), ordered by the pair, then kind."""
        sql, args = edges_statement(ids, min_score=min_score, gamma=gamma)
        kinds = _KINDS
        # Positional reads, in the statement's column order: a few hundred rows a request.
        return [
            GraphEdge(
                source=row[0],
                target=row[1],
                kind=kinds[row[2]],
                score=row[3],
                rank=row[4],
                set_id=row[5],
                model=row[6],
                computed_at=row[7],
                bidirectional=row[8],
            )
            for row in await conn.fetch(sql, *args)
        ]

    async def kept_pairs(
        self,
        conn: Connection,
        ids: Sequence[UUID],
        *,
        k: int,
        min_score: float,
        gamma: float,
        visibility: NoteVisibility | None,
    ) -> set[tuple[UUID, UUID]]:
        """The pairs among ``ids`` (smaller id first) that are among the k strongest
        neighbours of either end."""
        sql, args = _bound(
            _KEPT_PAIRS, visibility, ids=list(ids), k=k, min_score=min_score, gamma=gamma
        )
        return {(row["a"], row["b"]) for row in await conn.fetch(sql, *args)}
