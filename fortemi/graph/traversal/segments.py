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

from datetime import timedelta

from fortemi.graph.traversal.segment import GraphSegment
from fortemi.graph.traversal.segment_repository import build, estimated_links, forget_changes
from fortemi.platform.database import Database
from fortemi.platform.segments import HeldSegments

__all__ = ["CHANGE_RETENTION", "REBUILD_AFTER", "USABLE_FOR", "GraphSegments"]

REBUILD_AFTER = HeldSegments.rebuild_after  # seconds: an older segment is rebuilt
USABLE_FOR = HeldSegments.usable_for  # seconds: an older segment is not read at all
CHANGE_RETENTION = timedelta(hours=2)  # beyond USABLE_FOR by more than any write transaction


class GraphSegments(HeldSegments[GraphSegment]):
    """The traversal segments, within a budget of links."""

    kind = "traversal segment"
    # A memory whose graph keeps changing would otherwise be rebuilt after every write: a
    # build waits this long after the previous one started (the statement answers meanwhile).
    rebuild_every = 2.0

    def __init__(self, db: Database, *, gamma: float, budget: int) -> None:
        """``budget``: the most links held across memories (0: no segments)."""
        super().__init__(budget=budget)
        self._db = db
        self._gamma = gamma
        self.hits = 0  # walks the segment path answered (tests and benchmarks read it)

    def size(self, segment: GraphSegment) -> int:
        return segment.links

    def stale(self, memory: str, segment: GraphSegment) -> None:
        """A query found the graph changed since ``segment``'s snapshot: it is dropped (the
        change is permanent) and a new one built."""
        self.drop(memory, segment)
        self.refresh(memory)

    async def load(self, memory: str, budget: int) -> GraphSegment | None:
        async with self._db.memory_transaction(memory, isolation="repeatable_read") as conn:
            if await estimated_links(conn) > 2 * budget:
                return None  # far too big: not read at all
            segment = await build(conn, self._gamma)
        async with self._db.memory_transaction(memory) as conn:
            await forget_changes(conn, CHANGE_RETENTION)
        return segment
