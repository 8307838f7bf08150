"""The statements of the traversal segment (:mod:`.segment`): a memory's notes and
traversable links as of one snapshot (to build a segment, in a REPEATABLE READ
transaction), and dropping the change rows no readable segment needs. The query's check
is :meth:`~fortemi.graph.traversal.repository.TraversalRepository.segment_read`, one
statement with the walk's nodes."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.graph.traversal.segment import GraphSegment, SegmentLinks
from fortemi.platform.database import Connection
from fortemi.platform.isotext import iso_text_sql
from fortemi.platform.snapshots import Snapshot

__all__ = ["build", "estimated_links", "forget_changes"]

_HEAD = "SELECT pg_current_snapshot()::text, 'graph_change'::regclass::oid::int8"
# The planner's row estimate (kept by ANALYZE and autovacuum): a memory far over the budget
# is not read into RAM only to be dropped.
_ESTIMATE = "SELECT greatest(reltuples, 0)::int8 FROM pg_class WHERE oid = 'note_link'::regclass"
# The notes in id order: their ids as one bytea of 16-byte UUIDs (decoding a uuid[] of
# thousands took asyncpg microseconds each), whether each is live, its project and skill.
_NOTES = """
SELECT string_agg(uuid_send(id), ''::bytea ORDER BY id), array_agg(deleted_at IS NULL ORDER BY id),
       array_agg(project ORDER BY id), array_agg(skill ORDER BY id)
FROM note
"""
# The statement's bounds: min and max over every semantic link, pruned ones included.
_BOUNDS = "SELECT min(score)::float8, max(score)::float8 FROM note_link WHERE kind = 'semantic'"
# The traversable links (the walk indexes' predicate, fortemi.graph.traversal.repository)
# as big-endian arrays in one bytea each, their ends numbered as the notes above: numpy
# reads them as they come. Models and times as codes into their distinct values.
_LINKS = """
WITH numbered AS MATERIALIZED (
    SELECT id, (row_number() OVER (ORDER BY id) - 1)::int4 AS n FROM note
),
links AS MATERIALIZED (
    SELECT s.n AS source, t.n AS target,
           (CASE l.kind WHEN 'explicit' THEN 0 WHEN 'semantic' THEN 1 ELSE 2 END)::int4 AS kind,
           l.score::float8 AS score, coalesce(l.rank, -1)::int4 AS rank,
           coalesce(l.set_id, -1)::int4 AS set_id, l.model, l.computed_at
    FROM note_link l
    JOIN numbered s ON s.id = l.source_id
    JOIN numbered t ON t.id = l.target_id
    WHERE l.kind <> 'semantic' OR NOT l.pruned
),
models AS MATERIALIZED (
    SELECT d.model, (row_number() OVER (ORDER BY d.model) - 1)::int4 AS code
    FROM (SELECT DISTINCT model FROM links) AS d
),
stamps AS MATERIALIZED (
    SELECT d.computed_at, (row_number() OVER (ORDER BY d.computed_at) - 1)::int4 AS code
    FROM (SELECT DISTINCT computed_at FROM links) AS d
)
SELECT string_agg(int4send(k.source), ''::bytea), string_agg(int4send(k.target), ''::bytea),
       string_agg(int4send(k.kind), ''::bytea), string_agg(float8send(k.score), ''::bytea),
       string_agg(int4send(k.rank), ''::bytea), string_agg(int4send(k.set_id), ''::bytea),
       string_agg(int4send(m.code), ''::bytea), string_agg(int4send(c.code), ''::bytea),
       (SELECT array_agg(model ORDER BY code) FROM models),
       (SELECT array_agg({computed_at} ORDER BY code) FROM stamps)
FROM links k
JOIN models m ON m.model IS NOT DISTINCT FROM k.model
JOIN stamps c ON c.computed_at = k.computed_at
""".replace("{computed_at}", iso_text_sql("computed_at"))
_FORGET = "DELETE FROM graph_change WHERE at < clock_timestamp() - $1::interval"


def _ints(data: bytes | None) -> npt.NDArray[np.int64]:
    return np.frombuffer(data or b"", dtype=">i4").astype(np.int64)


async def build(conn: Connection, gamma: float) -> GraphSegment:
    """The memory's segment as the transaction's snapshot holds it (REPEATABLE READ)."""
    head = await conn.fetchrow(_HEAD)
    notes = await conn.fetchrow(_NOTES)
    bounds = await conn.fetchrow(_BOUNDS)
    links = await conn.fetchrow(_LINKS)
    if head is None or notes is None or bounds is None or links is None:
        raise RuntimeError("an aggregate without GROUP BY returned no row")
    packed = notes[0] or b""
    ids = [UUID(bytes=packed[i : i + 16]) for i in range(0, len(packed), 16)]
    return GraphSegment.of(
        Snapshot.parse(head[0]),
        int(head[1]),
        gamma,
        notes=(ids, notes[1] or [], notes[2] or [], notes[3] or []),
        bounds=(bounds[0], bounds[1]),
        links=SegmentLinks(
            source=_ints(links[0]),
            target=_ints(links[1]),
            kind=_ints(links[2]),
            score=np.frombuffer(links[3] or b"", dtype=">f8").astype(np.float64),
            rank=_ints(links[4]),
            set_id=_ints(links[5]),
            model=_ints(links[6]),
            models=list(links[8] or ()),
            computed=_ints(links[7]),
            stamps=list(links[9] or ()),
        ),
    )


async def forget_changes(conn: Connection, older_than: timedelta) -> None:
    """Drop the change rows older than ``older_than``: no readable segment needs them.
    Builds do it, and so does graph maintenance, which follows every Linking run, so a
    memory whose graph is written but never walked does not keep every row."""
    await conn.execute(_FORGET, older_than)


async def estimated_links(conn: Connection) -> int:
    """About how many links the memory has (0 before its first ANALYZE)."""
    return int(await conn.fetchval(_ESTIMATE) or 0)
