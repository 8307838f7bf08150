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

from fortemi.graph.traversal.segment import GraphSegment
from fortemi.graph.traversal.segment_repository import build, estimated_links, forget_changes
from fortemi.platform.database import Database

__all__ = ["CHANGE_RETENTION", "REBUILD_AFTER", "USABLE_FOR", "GraphSegments"]

log = logging.getLogger(__name__)

REBUILD_AFTER = 600.0  # seconds: an older segment is rebuilt (and read meanwhile)
USABLE_FOR = 1800.0  # seconds: an older segment is not read at all
CHANGE_RETENTION = timedelta(hours=2)  # beyond USABLE_FOR by more than any write transaction
# A memory whose graph keeps changing would otherwise be rebuilt after every write: a
# build waits this long after the previous one started (the statement answers meanwhile).
REBUILD_EVERY = 2.0


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
                if await estimated_links(conn) > 2 * self._budget:
                    segment = None  # far too big: not read at all
                else:
                    segment = await build(conn, self._gamma)
            async with self._db.memory_transaction(memory) as conn:
                await forget_changes(conn, CHANGE_RETENTION)
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
