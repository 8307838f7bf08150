"""Turning events into webhook deliveries: a Redis consumer group over the event stream.

Every API replica runs one :class:`WebhookFanout`; the consumer group hands each event to
exactly one of them. An event is acknowledged only after its deliveries (and their jobs)
are committed, so a replica that dies mid-batch leaves its events pending in the group,
and another replica claims them once they have been idle for ``claim_idle_ms``; the
delivery table's (webhook, event) key makes handling an event twice harmless. The group
lives in Redis: after a flush it is created again, from then on (events are
notifications; what a flush loses, subscribers lose too).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from fortemi.platform.errors import Unavailable
from fortemi.platform.events import STREAM, Event
from fortemi.platform.jobs.models import Job
from fortemi.webhooks.service import WebhookService

__all__ = ["GROUP", "WebhookFanout"]

log = logging.getLogger(__name__)

GROUP = "fortemi:webhooks"
_BATCH = 100


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class WebhookFanout:
    def __init__(
        self,
        client: redis.Redis,
        webhooks: WebhookService,
        dispatch: Callable[[Sequence[Job]], Awaitable[None]],
        *,
        stream: str = STREAM,
        block_ms: int = 2000,
        claim_idle_ms: int = 30_000,
        retry_seconds: float = 1.0,
    ) -> None:
        self._redis = client
        self._webhooks = webhooks
        self._dispatch = dispatch
        self._stream = stream
        self._block_ms = block_ms
        self._claim_idle_ms = claim_idle_ms
        self._retry_seconds = retry_seconds
        self.consumer = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._own_pending = True  # at start, and after a failed batch: ours to redo first
        self._group_ready = False

    async def run(self) -> None:
        """Fan out until cancelled; a failing batch is retried, never dropped."""
        while True:
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._own_pending = True
                if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                    self._group_ready = False  # Redis was flushed
                log.warning(
                    "webhook fan-out failed (%s); retrying in %.1fs",
                    type(exc).__name__,
                    self._retry_seconds,
                )
                await asyncio.sleep(self._retry_seconds)

    async def step(self) -> int:
        """Handle one batch: our own unacknowledged events first, then others' stale ones,
        then new ones (waiting up to ``block_ms``). Returns how many events it handled."""
        await self._ensure_group()
        entries: Sequence[tuple[Any, Any]]
        if self._own_pending:
            entries = await self._read("0", block=False)
            if not entries:
                self._own_pending = False
                entries = await self._claim_stale()
        else:
            entries = await self._read(">", block=True)
        if entries:
            await self._handle(entries)
        return len(entries)

    async def close(self) -> None:
        """Leave the group if nothing is left pending under this consumer's name."""
        try:
            info: Any = await self._redis.xpending_range(
                self._stream, GROUP, min="-", max="+", count=1, consumername=self.consumer
            )
            if not info:
                await self._redis.xgroup_delconsumer(self._stream, GROUP, self.consumer)
        except RedisError:
            pass

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            await self._redis.xgroup_create(self._stream, GROUP, id="$", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    async def _read(self, position: str, *, block: bool) -> Sequence[tuple[Any, Any]]:
        try:
            reply: Any = await self._redis.xreadgroup(
                GROUP,
                self.consumer,
                {self._stream: position},
                count=_BATCH,
                block=self._block_ms if block else None,
            )
        except RedisTimeoutError:
            return []  # a quiet stream outlasted the client's socket timeout
        return [entry for _, entries in reply or () for entry in entries]

    async def _claim_stale(self) -> Sequence[tuple[Any, Any]]:
        """Events another consumer took and left unacknowledged for ``claim_idle_ms``."""
        reply: Any = await self._redis.xautoclaim(
            self._stream, GROUP, self.consumer, self._claim_idle_ms, start_id="0-0", count=_BATCH
        )
        return list(reply[1]) if reply else []

    async def _handle(self, entries: Sequence[tuple[Any, Any]]) -> None:
        events: list[Event] = []
        for event_id, fields in entries:
            raw = (fields or {}).get(b"e") or (fields or {}).get("e")
            if raw is None:
                continue  # trimmed away, or not an event: nothing to deliver
            try:
                events.append(Event.decode(_text(event_id), _text(raw)))
            except (ValueError, TypeError, KeyError):
                log.error("event %s is malformed; not delivered to webhooks", _text(event_id))
        try:
            jobs = await self._webhooks.fan_out(events)
        except Unavailable:
            raise  # the database or Redis is down: the batch waits, unacknowledged
        except Exception:
            # Not an outage: perhaps one event the fan-out cannot handle. Go one by one so
            # that one is logged and skipped instead of holding back every event after it.
            log.exception("webhook fan-out of a batch failed; retrying its events one by one")
            jobs = await self._one_by_one(events)
        if jobs:
            await self._dispatch(jobs)
        await self._redis.xack(self._stream, GROUP, *[event_id for event_id, _ in entries])

    async def _one_by_one(self, events: Sequence[Event]) -> list[Job]:
        jobs: list[Job] = []
        for event in events:
            try:
                jobs.extend(await self._webhooks.fan_out([event]))
            except Unavailable:
                raise
            except Exception:
                log.exception("event %s (%s) not delivered to webhooks", event.id, event.type)
        return jobs
