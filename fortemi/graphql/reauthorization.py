"""A subscription's access, decided again for as long as it streams.

A subscription decides access when it starts; the policies and the caller's token may
change while it runs (a policy edited on any replica, a token renewed on the socket).
:class:`Reauthorized` holds the decision together with what it was made under (the
policy set's version and the principal) and makes it again when either changed: before
each event is delivered, and every ``FORTEMI_POLICY_REFRESH_SECONDS`` while the stream
waits, so a subscriber who lost access hears so even from a silent stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Generic, TypeVar

from fortemi.auth.principal import Principal
from fortemi.graphql.context import Info

__all__ = ["Reauthorized"]

T = TypeVar("T")
Item = TypeVar("Item")


class Reauthorized(Generic[T]):
    """A subscription's access decision, made again whenever the policy set in force or
    the caller's principal changed since it was last made.

    ``decide`` raises (FORBIDDEN, NOT_FOUND) when access is gone, which ends the stream
    with that error; otherwise it returns what filters the events (a read scope). Asking
    costs one comparison while nothing changed: the policy provider serves its set from
    memory and learns of changes elsewhere through the shared generation counter. Each
    re-decision is recorded in the audit log like any other.
    """

    def __init__(self, info: Info, decide: Callable[[], Awaitable[T]]) -> None:
        self._info = info
        self._decide = decide
        # (policy set version, principal) -> what was decided under them
        self._decided: tuple[tuple[str, Principal], T] | None = None
        self._lock = asyncio.Lock()  # the periodic check and a delivery decide once

    async def current(self) -> T:
        """The decision under the policies in force now; raises if access is gone."""
        context = self._info.context
        async with self._lock:
            policies = await context.services.policies.snapshot()
            key = (policies.version, context.caller)
            if self._decided is None or self._decided[0] != key:
                self._decided = (key, await self._decide())
            return self._decided[1]

    async def watch(self, source: AsyncIterator[Item]) -> AsyncIterator[tuple[T, Item]]:
        """Each item of ``source`` with the decision in force when it is delivered.

        While waiting for the next item, the decision is checked every policy refresh
        interval; if access is gone, the wait is cut (the stream is ending anyway) and
        the error is raised. The check runs as a task, never around the wait: cancelling
        the wait for anything but the end would end the source.
        """
        loop = asyncio.get_running_loop()
        every = self._info.context.services.settings.policy_refresh_seconds
        waiting: asyncio.Task[object] | None = None
        denial: Exception | None = None
        check: asyncio.Task[None] | None = None
        timer: asyncio.TimerHandle

        async def recheck() -> None:
            nonlocal denial
            try:
                await self.current()
            except Exception as exc:  # any failure to decide ends the stream: fail closed
                denial = exc
                if waiting is not None:
                    waiting.cancel()

        def tick() -> None:
            nonlocal check, timer
            if check is None or check.done():
                check = loop.create_task(recheck())
            timer = loop.call_later(every, tick)

        timer = loop.call_later(every, tick)
        try:
            while denial is None:
                waiting = asyncio.current_task()
                try:
                    item = await anext(source)
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if denial is not None and current is not None and current.uncancel() == 0:
                        break  # our own cancellation: access is gone
                    raise
                except StopAsyncIteration:
                    return
                finally:
                    waiting = None
                yield await self.current(), item
            raise denial
        finally:
            timer.cancel()
            if check is not None:
                check.cancel()
