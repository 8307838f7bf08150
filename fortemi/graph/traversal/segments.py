"""The traversal segments this process holds (:mod:`.segment`), one per memory walked
lately, within a budget of links; each is built in the background the first time its
memory is walked, again when it has aged, and as soon as a query finds the graph changed.

A walk never waits for a build: until a memory's segment is ready, and whenever a query
finds that something changed since its snapshot, the recursive statement answers. A build
reads the notes' read-scope columns and the traversable links in one REPEATABLE READ
transaction, then drops ``graph_change`` rows older than ``CHANGE_RETENTION``; a segment
is read only while younger than ``USABLE_FOR``, well inside that retention, so every row
its check needs is there (unless a writing transaction stays open longer than the
difference, an hour and a half).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from datetime import timedelta
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.graph.traversal.segment import GraphSegment, SegmentLinks
from fortemi.platform.database import Connection, Database
from fortemi.platform.isotext import iso_text_sql
from fortemi.retrieval.segment import Snapshot

__all__ = [
    "CHANGE_RETENTION",
    "REBUILD_AFTER",
    "USABLE_FOR",
    "GraphSegments",
    "build",
    "forget_changes",
]

log = logging.getLogger(__name__)

REBUILD_AFTER = 600.0  # seconds: an older segment is rebuilt (and read meanwhile)
USABLE_FOR = 1800.0  # seconds: an older segment is not read at all
CHANGE_RETENTION = timedelta(hours=2)  # beyond USABLE_FOR by more than any write transaction
# A memory whose graph keeps changing would otherwise be rebuilt after every write: a
# build waits this long after the previous one started (the statement answers meanwhile).
REBUILD_EVERY = 2.0

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


async def forget_changes(conn: Connection) -> None:
    """Drop the change rows older than ``CHANGE_RETENTION``: no readable segment needs
    them. Builds do it, and so does graph maintenance, which follows every Linking run, so
    a memory whose graph is written but never walked does not keep every row."""
    await conn.execute(_FORGET, CHANGE_RETENTION)


class GraphSegments:
    def __init__(self, db: Database, *, gamma: float, budget: int) -> None:
        """``budget``: the most links held across memories (0: no segments)."""
        self._db = db
        self._gamma = gamma
        self._budget = budget
        self._held: OrderedDict[str, tuple[float, GraphSegment]] = OrderedDict()
        self._building: dict[str, asyncio.Task[None]] = {}
        self._started: dict[str, float] = {}  # memory → when its last build started
        self._too_big: dict[str, float] = {}  # memory → when it was found over the budget
        self.hits = 0  # walks the segment path answered (tests and benchmarks read it)

    def current(self, memory: str) -> GraphSegment | None:
        """``memory``'s segment if one is ready and young enough to read; a build is started
        when there is none or it has aged."""
        if self._budget <= 0:
            return None
        held = self._held.get(memory)
        now = time.monotonic()
        if held is None or now - held[0] > REBUILD_AFTER:
            self.refresh(memory)
        if held is None or now - held[0] > USABLE_FOR:
            return None
        self._held.move_to_end(memory)
        return held[1]

    def stale(self, memory: str, segment: GraphSegment) -> None:
        """A query found the graph changed since ``segment``'s snapshot: it is dropped (the
        change is permanent) and a new one built."""
        held = self._held.get(memory)
        if held is not None and held[1] is segment:
            del self._held[memory]
        self.refresh(memory)

    def refresh(self, memory: str, *, now: bool = False) -> None:
        """Build ``memory``'s segment anew in the background (once at a time; ``now``
        skips the wait between builds)."""
        if self._budget <= 0 or memory in self._building:
            return
        clock = time.monotonic()
        over = self._too_big.get(memory)
        if over is not None and clock - over < REBUILD_AFTER:
            return  # it did not fit a while ago; the statement answers until it is asked again
        if not now and clock - self._started.get(memory, -REBUILD_EVERY) < REBUILD_EVERY:
            return
        self._started[memory] = clock
        task = asyncio.get_running_loop().create_task(self._build(memory))
        self._building[memory] = task
        task.add_done_callback(lambda _: self._building.pop(memory, None))

    async def ready(self, memory: str) -> GraphSegment | None:
        """``memory``'s segment once the build under way, or one started now if there is
        none, has finished (benchmarks and tests wait on it)."""
        if memory not in self._held:
            self.refresh(memory, now=True)
        task = self._building.get(memory)
        if task is not None:
            await asyncio.shield(task)
        return self.current(memory)

    async def close(self) -> None:
        """Stop the builds under way; the segments go with the process."""
        tasks = list(self._building.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._held.clear()

    async def _build(self, memory: str) -> None:
        started = time.monotonic()
        try:
            async with self._db.memory_transaction(memory, isolation="repeatable_read") as conn:
                if int(await conn.fetchval(_ESTIMATE) or 0) > 2 * self._budget:
                    segment = None  # far too big: not read at all
                else:
                    segment = await build(conn, self._gamma)
            async with self._db.memory_transaction(memory) as conn:
                await forget_changes(conn)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a build is an optimisation: the statement still answers
            log.warning("traversal segment of %s not built: %s", memory, type(exc).__name__)
            self._held.pop(memory, None)
            return
        if segment is None or segment.links > self._budget:
            self._too_big[memory] = time.monotonic()
            self._held.pop(memory, None)
            return
        self._too_big.pop(memory, None)
        self._held[memory] = (started, segment)
        self._held.move_to_end(memory)
        while sum(s.links for _, s in self._held.values()) > self._budget:
            self._held.popitem(last=False)
        log.debug(
            "traversal segment of %s: %d notes, %d links in %.2f s",
            memory, len(segment.ids), segment.links, time.monotonic() - started,
        )  # fmt: skip
