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

from datetime import timedelta

from fortemi.platform.database import Database
from fortemi.platform.segments import HeldSegments
from fortemi.retrieval.segment import Segment
from fortemi.retrieval.segment_repository import SegmentRepository

__all__ = ["REBUILD_AFTER", "REBUILD_CHANGES", "TOMBSTONE_RETENTION", "USABLE_FOR", "Segments"]

REBUILD_AFTER = HeldSegments.rebuild_after  # seconds: an older segment is rebuilt
USABLE_FOR = HeldSegments.usable_for  # seconds: an older segment is not read at all
TOMBSTONE_RETENTION = timedelta(hours=2)  # beyond USABLE_FOR by more than any write transaction
# Past this many changed notes a query's delta costs more than a rebuild spread over the
# queries that follow it: the segment is rebuilt (and read meanwhile, up to MOST_CHANGES).
REBUILD_CHANGES = 256
MOST_CHANGES = 2048  # beyond this many the delta is not read: the statement paths answer


class Segments(HeldSegments[Segment]):
    """The lexical segments, within a budget of postings."""

    kind = "lexical segment"

    def __init__(self, db: Database, *, budget: int) -> None:
        """``budget``: the most postings held across memories (0: no segments)."""
        super().__init__(budget=budget)
        self._db = db
        self._repository = SegmentRepository()

    @property
    def repository(self) -> SegmentRepository:
        return self._repository

    def size(self, segment: Segment) -> int:
        return segment.postings

    async def load(self, memory: str, budget: int) -> Segment | None:
        async with self._db.memory_transaction(memory, isolation="repeatable_read") as conn:
            if await self._repository.estimated_postings(conn) > 2 * budget:
                return None  # far too big: not read at all
            segment = await self._repository.build(conn)
        async with self._db.memory_transaction(memory) as conn:
            await self._repository.forget_tombstones(conn, TOMBSTONE_RETENTION)
        return segment
