"""Note changes from the event bus, as MCP ``ResourceUpdated`` events.

The feed runs for as long as the MCP endpoint does (not only while a stream listens: a
feed started by the first listener could join the event bus after that listener's ack,
and miss a change made right after it). The SDK's bus delivers each event only to the
streams that subscribed to that note's URI, which were allowed to read the note when they
subscribed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated

from fortemi.mcp.resources import NoteUri
from fortemi.platform.errors import FortemiError
from fortemi.platform.events import EventBus

__all__ = ["NoteFeed"]

log = logging.getLogger(__name__)

_RETRY_SECONDS = 1.0


class NoteFeed:
    def __init__(self, events: EventBus, bus: InMemorySubscriptionBus) -> None:
        self._events = events
        self._bus = bus
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="mcp-note-feed")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError), anyio.CancelScope(shield=True):
                await task

    async def _run(self) -> None:
        while True:
            try:
                async for event in self._events.subscribe():
                    if event.entity_type == "note" and event.memory:
                        uri = NoteUri(event.memory, event.entity_id)
                        await self._bus.publish(ResourceUpdated(str(uri)))
            except FortemiError:
                # Redis unreachable or events lost: notifications are hints, not the
                # record, and subscribers re-read; listen again shortly.
                log.warning("note events unavailable to MCP subscribers; retrying")
                await asyncio.sleep(_RETRY_SECONDS)
