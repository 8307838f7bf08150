"""The segments this process holds, one per memory searched lately, within a budget of
postings; each is built in the background the first time its memory is searched and
again when it has aged or too much changed since (:mod:`~fortemi.retrieval.segment`).

A search never waits for a build: until a memory's segment is ready its queries take the
statement paths. A build reads the whole index in one REPEATABLE READ transaction, then
drops tombstones older than ``TOMBSTONE_RETENTION``; a segment is read only while younger
than ``USABLE_FOR``, well inside that retention, so every tombstone it needs is there
(unless a writing transaction stays open longer than the difference, an hour and a half).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from datetime import timedelta

from fortemi.platform.database import Database
from fortemi.retrieval.segment import Segment
from fortemi.retrieval.segment_repository import SegmentRepository

__all__ = ["REBUILD_AFTER", "REBUILD_CHANGES", "TOMBSTONE_RETENTION", "USABLE_FOR", "Segments"]

log = logging.getLogger(__name__)

REBUILD_AFTER = 600.0  # seconds: an older segment is rebuilt (and read meanwhile)
USABLE_FOR = 1800.0  # seconds: an older segment is not read at all
TOMBSTONE_RETENTION = timedelta(hours=2)  # beyond USABLE_FOR by more than any write transaction
# Past this many changed notes a query's delta costs more than a rebuild spread over the
# queries that follow it: the segment is rebuilt (and read meanwhile, up to MOST_CHANGES).
REBUILD_CHANGES = 256
MOST_CHANGES = 2048  # beyond this many the delta is not read: the statement paths answer


class Segments:
    def __init__(self, db: Database, *, budget: int) -> None:
        """``budget``: the most postings held across memories (0: no segments)."""
        self._db = db
        self._budget = budget
        self._repository = SegmentRepository()
        self._held: OrderedDict[str, tuple[float, Segment]] = OrderedDict()  # memory → (built, s)
        self._building: dict[str, asyncio.Task[None]] = {}
        self._too_big: dict[str, float] = {}  # memory → when it was found over the budget

    @property
    def repository(self) -> SegmentRepository:
        return self._repository

    def current(self, memory: str) -> Segment | None:
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

    def refresh(self, memory: str) -> None:
        """Build ``memory``'s segment anew in the background (once at a time)."""
        if self._budget <= 0 or memory in self._building:
            return
        over = self._too_big.get(memory)
        if over is not None and time.monotonic() - over < REBUILD_AFTER:
            return  # it did not fit a while ago; statements answer until it is asked again
        task = asyncio.get_running_loop().create_task(self._build(memory))
        self._building[memory] = task
        task.add_done_callback(lambda _: self._building.pop(memory, None))

    def drop(self, memory: str) -> None:
        """Forget ``memory``'s segment (it was found wrong for the memory, e.g. remade)."""
        self._held.pop(memory, None)

    async def ready(self, memory: str) -> Segment | None:
        """``memory``'s segment once the build under way, or one started now if there is
        none, has finished (benchmarks and tests wait on it)."""
        self.current(memory)
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
                if await self._repository.estimated_postings(conn) > 2 * self._budget:
                    segment = None  # far too big: not read at all
                else:
                    segment = await self._repository.build(conn)
            async with self._db.memory_transaction(memory) as conn:
                await self._repository.forget_tombstones(conn, TOMBSTONE_RETENTION)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a build is an optimisation: statements still answer
            log.warning("lexical segment of %s not built: %s", memory, type(exc).__name__)
            self._held.pop(memory, None)
            return
        if segment is None or segment.postings > self._budget:
            self._too_big[memory] = time.monotonic()
            self._held.pop(memory, None)
            return
        self._too_big.pop(memory, None)
        self._held[memory] = (started, segment)
        self._held.move_to_end(memory)
        while sum(s.postings for _, s in self._held.values()) > self._budget:
            self._held.popitem(last=False)
        log.debug(
            "lexical segment of %s: %d notes, %d postings in %.2f s",
            memory, segment.size, segment.postings, time.monotonic() - started,
        )  # fmt: skip
