"""The Redis generation check, against in-memory twins of Redis and of the inner provider.

The real Redis runs in tests/integration/policy/test_redis_cache.py; here the twin lets a
test take Redis down and bring it back, which the shared session Redis cannot do.
"""

from __future__ import annotations

import logging

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from fortemi.auth.policy import PolicySet, RedisCachedPolicyProvider
from fortemi.platform.errors import Unavailable

from .helpers import build_set

KEY = "fortemi:policies:generation"


class CounterTwin:
    """Redis GET/INCR on one process's dict; ``down`` makes every call fail as Redis does."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self.down = False
        self.calls = 0

    async def get(self, name: str) -> bytes | None:
        self._answer()
        value = self.values.get(name)
        return None if value is None else str(value).encode()

    async def incr(self, name: str) -> int:
        self._answer()
        self.values[name] = self.values.get(name, 0) + 1
        return self.values[name]

    def _answer(self) -> None:
        self.calls += 1
        if self.down:
            raise RedisConnectionError("Connection refused")


class InnerTwin:
    """A provider whose reloads are counted and can be made to fail."""

    def __init__(self) -> None:
        self.current: PolicySet = build_set()
        self.reloads = 0
        self.failing = False

    async def snapshot(self) -> PolicySet:
        return self.current

    async def reload(self) -> PolicySet:
        if self.failing:
            raise Unavailable("The database is unavailable; retry later")
        self.reloads += 1
        return self.current


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def parts() -> tuple[CounterTwin, InnerTwin, Clock, RedisCachedPolicyProvider]:
    counter, inner, clock = CounterTwin(), InnerTwin(), Clock()
    return counter, inner, clock, RedisCachedPolicyProvider(inner, counter, clock=clock)


Parts = tuple[CounterTwin, InnerTwin, Clock, RedisCachedPolicyProvider]


async def test_redis_is_asked_at_most_once_per_refresh_interval(parts: Parts) -> None:
    counter, _, clock, cached = parts
    for _ in range(5):
        await cached.snapshot()
    assert counter.calls == 1
    clock.now += 0.999
    await cached.snapshot()
    assert counter.calls == 1
    clock.now += 0.001
    await cached.snapshot()
    assert counter.calls == 2


async def test_a_moved_counter_reloads_once_and_a_still_one_never(parts: Parts) -> None:
    counter, inner, clock, cached = parts
    await cached.snapshot()  # first reading: the inner set is loaded after it, no reload
    assert inner.reloads == 0
    counter.values[KEY] = 7  # another process announced a change
    clock.now += 1
    await cached.snapshot()
    assert inner.reloads == 1
    clock.now += 1
    await cached.snapshot()
    assert inner.reloads == 1


async def test_a_flushed_redis_reads_as_a_change(parts: Parts) -> None:
    counter, inner, clock, cached = parts
    counter.values[KEY] = 3
    await cached.snapshot()
    counter.values.clear()
    clock.now += 1
    await cached.snapshot()
    assert inner.reloads == 1


async def test_invalidate_announces_and_reloads_here_without_reloading_twice(
    parts: Parts,
) -> None:
    counter, inner, clock, cached = parts
    await cached.snapshot()
    await cached.invalidate()
    assert counter.values[KEY] == 1
    assert inner.reloads == 1
    clock.now += 1
    await cached.snapshot()  # our own announcement is not news to us
    assert inner.reloads == 1


async def test_redis_down_serves_the_current_set_and_logs_once(
    parts: Parts, caplog: pytest.LogCaptureFixture
) -> None:
    counter, inner, clock, cached = parts
    served = await cached.snapshot()
    counter.down = True
    with caplog.at_level(logging.WARNING, logger="fortemi.auth.policy.cache"):
        for _ in range(3):
            clock.now += 1
            assert await cached.snapshot() is served
    assert len(caplog.records) == 1
    assert "Redis unreachable" in caplog.records[0].getMessage()
    assert inner.reloads == 0


async def test_an_announcement_made_while_redis_was_down_is_made_when_it_is_back(
    parts: Parts,
) -> None:
    counter, inner, clock, cached = parts
    await cached.snapshot()
    counter.down = True
    await cached.invalidate()  # reloads here even though nobody else can be told
    assert inner.reloads == 1
    assert KEY not in counter.values
    counter.down = False
    clock.now += 1
    await cached.snapshot()
    assert counter.values[KEY] == 1  # the pending INCR went out
    assert inner.reloads == 2  # and what others changed meanwhile was read


async def test_a_first_load_while_redis_is_down_reloads_at_the_first_reading(
    parts: Parts,
) -> None:
    counter, inner, clock, cached = parts
    counter.down = True
    await cached.snapshot()
    counter.down = False
    clock.now += 1
    await cached.snapshot()
    assert inner.reloads == 1


async def test_a_failed_reload_keeps_the_set_and_is_retried(parts: Parts) -> None:
    counter, inner, clock, cached = parts
    await cached.snapshot()
    counter.values[KEY] = 1
    inner.failing = True
    clock.now += 1
    await cached.snapshot()
    assert inner.reloads == 0
    inner.failing = False
    clock.now += 1
    await cached.snapshot()
    assert inner.reloads == 1
