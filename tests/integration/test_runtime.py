"""The composition root closes what it opened: on close, and when any step of open fails."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import dramatiq
import httpx
import pytest
import redis.asyncio as redis

from fortemi import runtime as composition
from fortemi.auth.audit import AuditWriter
from fortemi.auth.policy import PolicyService
from fortemi.inference import build_backend
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.settings import Settings
from fortemi.runtime import STEPS, Runtime
from fortemi.webhooks.fanout import WebhookFanout

# What each step leaves open (by its name in the parts it fills in), in step order.
OPENS: dict[str, tuple[str, ...]] = {
    "_open_database": ("db",),
    "_open_http": ("http",),
    "_open_redis": ("redis",),
    "_open_policies": (),
    "_open_memories": (),
    "_open_audit": ("audit",),
    "_open_job_broker": ("broker",),
    "_open_backend": ("backend",),
    "_open_services": (),
    "_start_policy_watcher": ("watcher",),
    "_start_fanout": ("fanout", "fanout_task"),
}


class Boom(Exception):
    pass


class Closes:
    """Records which objects had their close method called (the method still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.closed: set[int] = set()
        self._monkeypatch = monkeypatch
        for kind, name in (
            (redis.Redis, "aclose"),
            (dramatiq.Broker, "close"),
            (WebhookFanout, "close"),
        ):
            self.spy(kind, name)

    def spy(self, kind: type, name: str) -> None:
        original: Callable[..., Any] = getattr(kind, name)
        closed = self.closed
        if inspect.iscoroutinefunction(original):

            async def async_spy(obj: object, *args: Any, **kwargs: Any) -> Any:
                closed.add(id(obj))
                return await original(obj, *args, **kwargs)

            self._monkeypatch.setattr(kind, name, async_spy)
        else:

            def spy(obj: object, *args: Any, **kwargs: Any) -> Any:
                closed.add(id(obj))
                return original(obj, *args, **kwargs)

            self._monkeypatch.setattr(kind, name, spy)

    def assert_closed(self, name: str, part: object) -> None:
        assert part is not None, f"{name} was never opened"
        if isinstance(part, Database):
            assert part._pool.is_closing(), "the database pool is still open"
        elif isinstance(part, httpx.AsyncClient):
            assert part.is_closed, "the HTTP client is still open"
        elif isinstance(part, AuditWriter):
            # Closing drains its queue and ends its background task.
            assert part._task is not None
            assert part._task.done(), "the audit writer still runs"
        elif isinstance(part, asyncio.Task):
            assert part.done(), f"task {name} still runs"
        else:
            assert id(part) in self.closed, f"{name} was not closed"


@pytest.fixture
async def closes(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Closes:
    spies = Closes(monkeypatch)
    backend = build_backend(settings)  # the kind the runtime builds (nothing loads yet)
    await backend.aclose()
    spies.spy(type(backend), "aclose")
    return spies


@pytest.mark.parametrize("failing", range(len(STEPS)), ids=[s.__name__ for s in STEPS])
async def test_a_failing_step_closes_everything_opened_before_and_raises(
    settings: Settings,
    service_urls: ServiceUrls,
    closes: Closes,
    monkeypatch: pytest.MonkeyPatch,
    failing: int,
) -> None:
    seen: list[Any] = []
    real = STEPS[failing]

    async def fails_after_its_work(parts: Any) -> None:
        await real(parts)  # it opens what it opens, then fails
        seen.append(parts)
        raise Boom

    steps = (*STEPS[:failing], fails_after_its_work, *STEPS[failing + 1 :])
    monkeypatch.setattr(composition, "STEPS", steps)
    with pytest.raises(Boom):
        await Runtime.open(settings, service_urls)
    (parts,) = seen
    opened = [name for step in STEPS[: failing + 1] for name in OPENS[step.__name__]]
    for name in opened:
        closes.assert_closed(name, getattr(parts, name))


async def test_a_policy_reload_that_fails_closes_the_pool_and_the_clients(
    settings: Settings,
    service_urls: ServiceUrls,
    closes: Closes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []
    real = STEPS[0]

    async def database(parts: Any) -> None:
        await real(parts)
        seen.append(parts)

    async def reload(self: PolicyService) -> None:
        raise Boom

    monkeypatch.setattr(composition, "STEPS", (database, *STEPS[1:]))
    monkeypatch.setattr(PolicyService, "reload", reload)
    with pytest.raises(Boom):
        await Runtime.open(settings, service_urls)
    (parts,) = seen
    for name in ("db", "http", "redis"):
        closes.assert_closed(name, getattr(parts, name))


async def test_close_closes_everything_open_opened(
    settings: Settings,
    service_urls: ServiceUrls,
    closes: Closes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []
    last = STEPS[-1]

    async def fanout(parts: Any) -> None:
        await last(parts)
        seen.append(parts)

    monkeypatch.setattr(composition, "STEPS", (*STEPS[:-1], fanout))
    runtime = await Runtime.open(settings, service_urls)
    (parts,) = seen
    assert parts.watcher is not None
    assert not parts.watcher.done()  # the policy file watcher runs while the runtime is open
    await runtime.close()
    for name in (name for names in OPENS.values() for name in names):
        closes.assert_closed(name, getattr(parts, name))
