"""What every subscription shares: it holds only while the subscriber's access does.

A WebSocket authenticates once, in ``connection_init``, and a subscription decides access
when it starts; without this, a subscription opened with a five-minute token, or by a
subscriber whose access a policy change has since removed, would stream for as long as
the socket stays open. So a subscription ends when the token it runs under expires (a
renewed token moves that moment; see :mod:`fortemi.graphql.websocket`), and
:class:`~fortemi.graphql.reauthorization.Reauthorized` decides its access again whenever
the policies in force or the caller's credential changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import TypeVar

from fortemi.graphql.context import Info

__all__ = ["until", "until_token_expires"]

T = TypeVar("T")


def until_token_expires(info: Info, source: AsyncIterator[T]) -> AsyncIterator[T]:
    """Items of ``source`` until the caller's token expires, then stop."""
    return until(lambda: info.context.caller.expires_at, source)


async def until(
    deadline: datetime | Callable[[], datetime], source: AsyncIterator[T]
) -> AsyncIterator[T]:
    """Items of ``source`` until ``deadline``, then stop, even while waiting for one.

    A callable ``deadline`` is asked again when the timer runs out: if the moment moved
    later (a renewed token), the timer is set for it instead of stopping.

    One timer for the whole subscription, not ``asyncio.timeout`` around each item: a
    cancelled timer stays scheduled until its deadline, so an hour-long token leaked three
    objects per event delivered (measured: 4.4 million after 200,000 deliveries, and
    garbage-collection pauses past a second). At the deadline the timer cancels the wait
    for the next item if one is under way (as ``asyncio.timeout`` would), else the next
    iteration sees the flag and stops without waiting.
    """

    def remaining() -> float:
        moment = deadline() if callable(deadline) else deadline
        return (moment - datetime.now(UTC)).total_seconds()

    if remaining() <= 0:
        return
    loop = asyncio.get_running_loop()
    waiting: asyncio.Task[object] | None = None
    expired = False
    timer: asyncio.TimerHandle

    def expire() -> None:
        nonlocal expired, timer
        left = remaining()
        if left > 0:
            timer = loop.call_later(left, expire)
            return
        expired = True
        if waiting is not None:
            waiting.cancel()

    timer = loop.call_later(remaining(), expire)
    try:
        while not expired:
            waiting = asyncio.current_task()
            try:
                item = await anext(source)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if expired and current is not None and current.uncancel() == 0:
                    return  # our own cancellation: the token expired
                raise
            except StopAsyncIteration:
                return
            finally:
                waiting = None
            yield item
    finally:
        timer.cancel()
