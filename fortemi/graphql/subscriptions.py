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

__all__ = ["until_token_expires"]

T = TypeVar("T")


async def until_token_expires(info: Info, source: AsyncIterator[T]) -> AsyncIterator[T]:
    """Items of ``source`` until the caller's token expires, then stop."""
    expires_at = info.context.caller.expires_at
    while True:
        remaining = (expires_at - datetime.now(UTC)).total_seconds()
        if remaining <= 0:
            return
        try:
            async with asyncio.timeout(remaining):
                item = await anext(source)
        except (TimeoutError, StopAsyncIteration):
            return
        yield item
