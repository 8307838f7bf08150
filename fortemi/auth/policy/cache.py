"""Keeping every replica's policy set current: a Redis generation counter.

Each process serves its policy set from memory. A change (a database write, a
``reloadPolicies``) is announced by INCR-ing one Redis key; every process reads that key
at most once per ``refresh_seconds`` and reloads when it moved. So a change reaches every
replica and worker within about ``refresh_seconds``, at the cost of one GET per second per
process, whatever the request rate.

Redis only carries the announcement, never the policies: if it is flushed the counter
vanishes, which also reads as "changed" (one extra reload everywhere); if it is down,
every process keeps serving the set it has, logs once, and an announcement that could
not be made is made as soon as Redis answers again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from redis.exceptions import RedisError

from fortemi.auth.policy.policyset import PolicySet
from fortemi.auth.policy.providers import PolicyProvider
from fortemi.platform.errors import Unavailable
from fortemi.platform.metrics import POLICY_RELOADS

__all__ = ["GENERATION_KEY", "GenerationCounter", "RedisCachedPolicyProvider"]

log = logging.getLogger(__name__)

GENERATION_KEY = "fortemi:policies:generation"
_UNREAD = object()  # the counter has not been read yet
_BLIND = object()  # loaded without a trustworthy reading: the next reading reloads


class GenerationCounter(Protocol):
    """The two Redis commands used; ``redis.asyncio.Redis`` is one (tests use a twin)."""

    def get(self, name: str) -> Awaitable[Any]: ...

    def incr(self, name: str) -> Awaitable[Any]: ...


class RedisCachedPolicyProvider:
    """Wraps ``inner`` (whose ``snapshot()`` is already cheap) and reloads it when another
    process announces a change. ``invalidate()`` announces one and reloads here at once."""

    def __init__(
        self,
        inner: PolicyProvider,
        redis: GenerationCounter,
        *,
        refresh_seconds: float = 1.0,
        timeout_seconds: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        key: str = GENERATION_KEY,
    ) -> None:
        self.inner = inner
        self._redis = redis
        self._refresh_seconds = refresh_seconds
        self._timeout_seconds = timeout_seconds
        self._clock = clock
        self._key = key
        self._seen: object = _UNREAD  # the counter's value our set is at least as new as
        self._next_check = float("-inf")
        self._announce_pending = False  # an INCR failed; make it when Redis is back
        self._redis_up = True

    async def snapshot(self) -> PolicySet:
        """The set in force; at most once per ``refresh_seconds`` first asks Redis whether
        it changed elsewhere. Never fails because Redis does."""
        if self._clock() >= self._next_check:
            await self._check()
        return await self.inner.snapshot()

    async def reload(self) -> PolicySet:
        """Re-read the sources here only (see :meth:`invalidate` to reach every process)."""
        return await self.inner.reload()

    async def invalidate(self) -> PolicySet:
        """Announce a change to every process, and reload here at once.

        Call it after a database write commits (and for ``reloadPolicies``): the order
        write -> INCR -> reload guarantees that whoever sees the new counter reads the write.
        """
        reachable, generation = await self._redis_call(self._redis.incr(self._key))
        if reachable:
            self._seen = _generation(generation)
        else:
            self._announce_pending = True
        with _counted("changed_here"):
            return await self.inner.reload()

    async def _check(self) -> None:
        # Set before awaiting, so concurrent requests do not all ask Redis at once.
        self._next_check = self._clock() + self._refresh_seconds
        announcing = self._announce_pending
        call = self._redis.incr(self._key) if announcing else self._redis.get(self._key)
        reachable, raw = await self._redis_call(call)
        if not reachable:
            if self._seen is _UNREAD:
                self._seen = _BLIND  # our first load happens without knowing the counter
            return
        generation = _generation(raw)
        if announcing:
            self._announce_pending = False
            self._seen = _BLIND  # others may have announced while we could not look
        if self._seen is _UNREAD:
            # First look: the inner provider loads lazily after this read, so its set is
            # at least as new as ``generation``.
            self._seen = generation
            return
        if generation == self._seen:
            return
        try:
            with _counted("changed_elsewhere"):
                await self.inner.reload()
        except Unavailable as exc:
            log.warning("policy reload failed (%s); the previous set stays in force", exc)
            return  # ``_seen`` unchanged: the next check tries again
        log.info("policy change announced (generation %s); reloaded", generation)
        self._seen = generation

    async def _redis_call(self, call: Awaitable[Any]) -> tuple[bool, Any]:
        """(True, result) or, within the timeout, (False, None) if Redis is unreachable;
        an outage is logged once, when it starts."""
        try:
            async with asyncio.timeout(self._timeout_seconds):
                result = await call
        except (RedisError, OSError, TimeoutError) as exc:
            if self._redis_up:
                log.warning("Redis unreachable (%s); serving the current policy set", exc)
            self._redis_up = False
            return False, None
        if not self._redis_up:
            log.info("Redis reachable again; policy change checks resume")
        self._redis_up = True
        return True, result


@contextmanager
def _counted(trigger: str) -> Iterator[None]:
    """Count a reload by its trigger and outcome in ``fortemi_policy_reloads_total``."""
    try:
        yield
    except BaseException:
        POLICY_RELOADS.labels(trigger, "error").inc()
        raise
    POLICY_RELOADS.labels(trigger, "ok").inc()


def _generation(raw: object) -> str | None:
    """The counter as one comparable form, whether Redis answered bytes, str or int."""
    if raw is None:
        return None
    if isinstance(raw, bytes):
        return raw.decode(errors="replace")
    return str(raw)
