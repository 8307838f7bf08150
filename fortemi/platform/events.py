"""The event bus: versioned envelopes on one Redis Stream, shared by every replica.

A Redis Stream rather than plain pub/sub: it keeps order, gives every event an id that a
subscriber can resume after, and bounds its own size (``MAXLEN ~``), which is exactly the
bounded replay buffer reconnecting subscribers need. A subscriber resuming from an id the
stream no longer holds is told to resync (:class:`ResyncRequired`) instead of silently
missing events. Redis may be flushed at any time: events are notifications, never the
record (PostgreSQL is).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError, ResponseError

from fortemi.platform.errors import Conflict, Unavailable

__all__ = ["ENVELOPE_VERSION", "Event", "EventBus", "ResyncRequired"]

ENVELOPE_VERSION = 1
STREAM = "fortemi:events"


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


class EventBus:
    def __init__(
        self,
        client: redis.Redis,
        *,
        max_len: int = 10_000,
        stream: str = STREAM,
        approximate: bool = True,
    ) -> None:
        # Approximate trimming (MAXLEN ~) is much cheaper and keeps at least max_len.
        self._redis = client
        self._max_len = max_len
        self._stream = stream
        self._approximate = approximate

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

    async def subscribe(
        self, *, after: str | None = None, block_ms: int = 5000
    ) -> AsyncGenerator[Event, None]:
        """Events after ``after`` (missed ones first), else from now on; runs until closed."""
        position = "$" if after is None else await self._check_resume(after)
        while True:
            try:
                # redis-py types replies loosely; the shape is [[stream, [(id, fields)]]].
                batches: Any = await self._redis.xread({self._stream: position}, block=block_ms)
            except ResponseError as exc:  # a malformed id
                raise ResyncRequired(
                    f"Unknown event id {after!r}; re-read and resubscribe", reason="resync_required"
                ) from exc
            except RedisError as exc:
                raise Unavailable("The event bus is unavailable") from exc
            for _, entries in batches or ():
                for event_id, fields in entries:
                    position = _text(event_id)
                    raw = fields.get(b"e") or fields.get("e")
                    if raw is not None:
                        yield Event.decode(position, _text(raw))

    async def _check_resume(self, after: str) -> str:
        try:
            oldest: Any = await self._redis.xrange(self._stream, count=1)
        except RedisError as exc:
            raise Unavailable("The event bus is unavailable") from exc
        if oldest and _older(after, _text(oldest[0][0])):
            raise ResyncRequired(
                f"Events after {after} are no longer kept; re-read the state and resubscribe",
                reason="resync_required",
            )
        return after


def _older(a: str, b: str) -> bool:
    """Whether stream id ``a`` comes before ``b``: events between them may have been
    trimmed (ids are not contiguous, so which is unknowable), so the caller resyncs."""
    try:
        a_key = tuple(int(part) for part in a.split("-"))
        b_key = tuple(int(part) for part in b.split("-"))
    except ValueError as exc:
        raise ResyncRequired(f"{a!r} is not an event id", reason="resync_required") from exc
    return a_key < b_key
