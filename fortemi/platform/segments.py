"""What a process keeps in RAM per memory as of one database snapshot (a *segment*), and
when it builds it: the lexical index (``fortemi.retrieval.segments``) and the link graph
(``fortemi.graph.traversal.segments``) are both kept this way.

One segment per memory used lately, within a budget counted in the segment's own unit
(postings, links), least recently used out first. A segment is built in the background the
first time its memory is used and again when it has aged past ``rebuild_after``; a build
waits ``rebuild_every`` after the previous one started, unless asked for ``now``. A caller
never waits for a build: until a segment is ready, and once it is older than
``usable_for``, it reads the tables. A memory whose segment did not fit is not tried again
for ``rebuild_after``. Builds are tasks of the running loop; :meth:`HeldSegments.close`
stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["HeldSegments"]

log = logging.getLogger(__name__)

S = TypeVar("S")


class HeldSegments(ABC, Generic[S]):
    """The segments of one kind held by this process."""

    kind = "segment"  # for the log
    rebuild_after = 600.0  # seconds: an older segment is rebuilt (and read meanwhile)
    usable_for = 1800.0  # seconds: an older segment is not read at all
    rebuild_every = 0.0  # seconds between the starts of two builds of one memory

    def __init__(self, *, budget: int) -> None:
        """``budget``: the most units held across memories (0: no segments)."""
        self._budget = budget
        self._held: OrderedDict[str, tuple[float, S]] = OrderedDict()  # memory → (built, s)
        self._building: dict[str, asyncio.Task[None]] = {}
        self._started: dict[str, float] = {}  # memory → when its last build started
        self._too_big: dict[str, float] = {}  # memory → when it was found over the budget

    @abstractmethod
    async def load(self, memory: str, budget: int) -> S | None:
        """``memory``'s segment read now, or None when it is far over ``budget`` (then it
        is not read at all)."""

    @abstractmethod
    def size(self, segment: S) -> int:
        """What ``segment`` holds, in the budget's unit."""

    def current(self, memory: str) -> S | None:
        """``memory``'s segment if one is ready and young enough to read; a build is started
        when there is none or it has aged."""
        if self._budget <= 0:
            return None
        held = self._held.get(memory)
        now = time.monotonic()
        if held is None or now - held[0] > self.rebuild_after:
            self.refresh(memory)
        if held is None or now - held[0] > self.usable_for:
            return None
        self._held.move_to_end(memory)
        return held[1]

    def refresh(self, memory: str, *, now: bool = False) -> None:
        """Build ``memory``'s segment anew in the background (once at a time; ``now``
        skips the wait between builds)."""
        if self._budget <= 0 or memory in self._building:
            return
        clock = time.monotonic()
        over = self._too_big.get(memory)
        if over is not None and clock - over < self.rebuild_after:
            return  # it did not fit a while ago; the tables answer until it is asked again
        last = self._started.get(memory)
        if not now and last is not None and clock - last < self.rebuild_every:
            return
        self._started[memory] = clock
        task = asyncio.get_running_loop().create_task(self._build(memory))
        self._building[memory] = task
        task.add_done_callback(lambda _: self._building.pop(memory, None))

    def drop(self, memory: str, segment: S | None = None) -> None:
        """Forget ``memory``'s segment (``segment``: only if it is still that one), found
        wrong for the memory."""
        held = self._held.get(memory)
        if held is not None and (segment is None or held[1] is segment):
            del self._held[memory]

    async def ready(self, memory: str) -> S | None:
        """``memory``'s segment once the build under way, or one started now if there is
        none, has finished (benchmarks and tests wait on it)."""
        if memory not in self._held:
            self.refresh(memory, now=True)
        else:
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
            segment = await self.load(memory, self._budget)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a build is an optimisation: the tables still answer
            log.warning("%s of %s not built: %s", self.kind, memory, type(exc).__name__)
            self._held.pop(memory, None)
            return
        if segment is None or self.size(segment) > self._budget:
            self._too_big[memory] = time.monotonic()
            self._held.pop(memory, None)
            return
        self._too_big.pop(memory, None)
        self._held[memory] = (started, segment)
        self._held.move_to_end(memory)
        while sum(self.size(s) for _, s in self._held.values()) > self._budget:
            self._held.popitem(last=False)
        log.debug(
            "%s of %s: %d held in %.2f s",
            self.kind, memory, self.size(segment), time.monotonic() - started,
        )  # fmt: skip
