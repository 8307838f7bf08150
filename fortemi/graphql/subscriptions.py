"""What every subscription shares: it ends when the subscriber's token expires.

A WebSocket authenticates once, in ``connection_init``; without this, a subscription
opened with a five-minute token would stream for as long as the socket stays open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TypeVar

from fortemi.graphql.context import Info

__all__ = ["until", "until_token_expires"]

T = TypeVar("T")


def until_token_expires(info: Info, source: AsyncIterator[T]) -> AsyncIterator[T]:
    """Items of ``source`` until the caller's token expires, then stop."""
    return until(info.context.caller.expires_at, source)


async def until(deadline: datetime, source: AsyncIterator[T]) -> AsyncIterator[T]:
    """Items of ``source`` until ``deadline``, then stop, even while waiting for one.

    One timer for the whole subscription, not ``asyncio.timeout`` around each item: a
    cancelled timer stays scheduled until its deadline, so an hour-long token leaked three
    objects per event delivered (measured: 4.4 million after 200,000 deliveries, and
    garbage-collection pauses past a second). At the deadline the timer cancels the wait
    for the next item if one is under way (as ``asyncio.timeout`` would), else the next
    iteration sees the flag and stops without waiting.
    """
    remaining = (deadline - datetime.now(UTC)).total_seconds()
    if remaining <= 0:
        return
    waiting: asyncio.Task[object] | None = None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        if waiting is not None:
            waiting.cancel()

    timer = asyncio.get_running_loop().call_later(remaining, expire)
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
