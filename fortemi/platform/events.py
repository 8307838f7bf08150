"""The event bus: versioned envelopes on one Redis Stream, shared by every replica.

A Redis Stream rather than plain pub/sub: it keeps order, gives every event an id that a
subscriber can resume after, and bounds its own size (``MAXLEN ~``), which is exactly the
bounded replay buffer reconnecting subscribers need. A subscriber resuming from an id the
stream no longer holds is told to resync (:class:`ResyncRequired`) instead of silently
missing events. Redis may be flushed at any time: events are notifications, never the
record (PostgreSQL is).

Fan-out. A process reads the stream once, whatever its number of subscribers: one reader
task (started with the first subscriber, stopped with the last) hands each event to every
local subscriber's bounded queue without ever waiting. A subscriber too slow to keep up
is not waited for: it is marked lagging, stops receiving from the reader, and once it
has consumed what it holds it reads what it missed from the stream itself (``XRANGE``),
then rejoins. So a slow consumer delays only itself, and loses nothing unless it falls
behind the whole replay buffer (then: resync).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from fortemi.platform.errors import Conflict, Unavailable

__all__ = ["ENVELOPE_VERSION", "Event", "EventBus", "ResyncRequired"]

ENVELOPE_VERSION = 1
STREAM = "fortemi:events"
_REPLAY_PAGE = 500

log = logging.getLogger(__name__)


class ResyncRequired(Conflict):
    """The id to resume after is older than the replay buffer: re-read the state."""


@dataclass(frozen=True, slots=True)
class Event:
    type: str  # "note.created", "job.progress", ...
    entity_type: str
    entity_id: str
    memory: str | None = None
    actor: str | None = None
    correlation_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    id: str = ""  # the stream id, assigned on publish
    version: int = ENVELOPE_VERSION

    def encode(self) -> str:
        body = asdict(self)
        body.pop("id")
        body["at"] = self.at.isoformat()
        body["payload"] = dict(self.payload)
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def decode(cls, event_id: str, raw: str) -> Event:
        body = json.loads(raw)
        body["at"] = datetime.fromisoformat(body["at"])
        return cls(id=event_id, **body)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _Subscriber:
    """One subscription's queue. ``lagging`` is set by the reader when the queue is full:
    from then on the reader skips it until the subscriber has caught up from the stream."""

    __slots__ = ("lagging", "queue")

    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue[Event | BaseException] = asyncio.Queue(size)
        self.lagging = False


class EventBus:
    """Publish events; subscribe to them, with resume. One instance per process."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        max_len: int = 10_000,
        stream: str = STREAM,
        approximate: bool = True,
        block_ms: int = 2000,
        subscriber_buffer: int = 1000,
    ) -> None:
        # Approximate trimming (MAXLEN ~) is much cheaper and keeps at least max_len.
        self._redis = client
        self._max_len = max_len
        self._stream = stream
        self._approximate = approximate
        self._block_ms = block_ms
        self._buffer = subscriber_buffer
        self._subscribers: set[_Subscriber] = set()
        self._reader: asyncio.Task[None] | None = None

    @property
    def subscribers(self) -> int:
        """How many subscriptions this process is serving now."""
        return len(self._subscribers)

    async def publish(self, event: Event) -> str:
        """Append ``event``; its id. Raises Unavailable when Redis is down."""
        try:
            event_id = await self._redis.xadd(
                self._stream,
                {"e": event.encode()},
                maxlen=self._max_len,
                approximate=self._approximate,
            )
        except RedisError as exc:
            raise Unavailable("The event bus is unavailable") from exc
        return _text(event_id)

    async def publish_many(self, events: Sequence[Event]) -> list[str]:
        """Append ``events`` in order, in one round trip; their ids. Raises Unavailable
        when Redis is down (then any of them may or may not have been appended)."""
        if not events:
            return []
        pipe = self._redis.pipeline(transaction=False)
        for event in events:
            pipe.xadd(
                self._stream,
                {"e": event.encode()},
                maxlen=self._max_len,
                approximate=self._approximate,
            )
        try:
            ids = await pipe.execute()
        except RedisError as exc:
            raise Unavailable("The event bus is unavailable") from exc
        return [_text(event_id) for event_id in ids]

    async def subscribe(self, *, after: str | None = None) -> AsyncGenerator[Event, None]:
        """Events after ``after`` (missed ones first), else from now on; runs until closed.

        Raises ResyncRequired when events after ``after`` (or after the last one this
        subscription delivered, if it fell behind) are no longer kept, and Unavailable
        when Redis cannot be read.
        """
        subscriber = _Subscriber(self._buffer)
        # Join before replaying, so nothing published meanwhile falls between the two;
        # what arrives twice is dropped by id below.
        self._join(subscriber)
        last = after
        try:
            if after is not None:
                async for event in self._replay(after):
                    last = event.id
                    yield event
            while True:
                if subscriber.lagging and subscriber.queue.empty():
                    subscriber.lagging = False  # the reader delivers to us again from here
                    if last is not None:
                        async for event in self._replay(last):
                            last = event.id
                            yield event
                    continue
                item = await subscriber.queue.get()
                if isinstance(item, BaseException):
                    raise item
                if last is not None and not _older(last, item.id):
                    continue  # already delivered by a replay
                last = item.id
                yield item
        finally:
            self._leave(subscriber)

    # -- the process's one reader ------------------------------------------------------------

    def _join(self, subscriber: _Subscriber) -> None:
        self._subscribers.add(subscriber)
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read(), name="event-bus-reader")

    def _leave(self, subscriber: _Subscriber) -> None:
        self._subscribers.discard(subscriber)
        if not self._subscribers and self._reader is not None:
            self._reader.cancel()
            self._reader = None

    async def _read(self) -> None:
        position = "$"
        try:
            while True:
                try:
                    # redis-py types replies loosely: [[stream, [(id, fields)]]].
                    batches: Any = await self._redis.xread(
                        {self._stream: position}, block=self._block_ms, count=500
                    )
                except RedisTimeoutError:
                    # A quiet stream: the client's socket timeout beat the block. Not an
                    # outage; read again.
                    continue
                for _, entries in batches or ():
                    for event_id, fields in entries:
                        position = _text(event_id)
                        raw = fields.get(b"e") or fields.get("e")
                        if raw is not None:
                            self._deliver(Event.decode(position, _text(raw)))
        except RedisError as exc:
            log.warning("event bus reader stopped: %s", type(exc).__name__)
            self._fail(Unavailable("The event bus is unavailable"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a malformed entry: a bug, but subscribers must hear of it
            log.exception("event bus reader failed")
            self._fail(exc)

    def _deliver(self, event: Event) -> None:
        for subscriber in self._subscribers:
            if subscriber.lagging:
                continue
            try:
                subscriber.queue.put_nowait(event)
            except asyncio.QueueFull:
                subscriber.lagging = True

    def _fail(self, error: BaseException) -> None:
        for subscriber in list(self._subscribers):
            # Room is made for the error: the subscription ends with it either way.
            while subscriber.queue.full():
                subscriber.queue.get_nowait()
            subscriber.queue.put_nowait(error)
        self._reader = None

    async def _replay(self, after: str) -> AsyncGenerator[Event, None]:
        """What the stream holds after ``after``, oldest first, in pages."""
        try:
            oldest: Any = await self._redis.xrange(self._stream, count=1)
            if oldest and _older(after, _text(oldest[0][0])):
                raise ResyncRequired(
                    f"Events after {after} are no longer kept; re-read the state and resubscribe",
                    reason="resync_required",
                )
            position = after
            while True:
                page: Any = await self._redis.xrange(
                    self._stream, min=f"({position}", count=_REPLAY_PAGE
                )
                for event_id, fields in page:
                    position = _text(event_id)
                    raw = fields.get(b"e") or fields.get("e")
                    if raw is not None:
                        yield Event.decode(position, _text(raw))
                if len(page) < _REPLAY_PAGE:
                    return
        except ResponseError as exc:  # a malformed id
            raise ResyncRequired(
                f"Unknown event id {after!r}; re-read and resubscribe", reason="resync_required"
            ) from exc
        except RedisError as exc:
            raise Unavailable("The event bus is unavailable") from exc


def _older(a: str, b: str) -> bool:
    """Whether stream id ``a`` comes before ``b``: events between them may have been
    trimmed (ids are not contiguous, so which is unknowable), so the caller resyncs."""
    try:
        a_key = tuple(int(part) for part in a.split("-"))
        b_key = tuple(int(part) for part in b.split("-"))
    except ValueError as exc:
        raise ResyncRequired(f"{a!r} is not an event id", reason="resync_required") from exc
    return a_key < b_key
