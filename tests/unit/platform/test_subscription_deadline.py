"""Subscriptions end at the token's expiry, and cost no memory per event delivered."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from fortemi.graphql.subscriptions import until


async def _endless(queue: asyncio.Queue[int]) -> AsyncIterator[int]:
    while True:
        yield await queue.get()


def _in(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def test_delivering_many_events_keeps_no_timer_or_object_per_event() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    stream = until(_in(3600), _endless(queue))
    queue.put_nowait(0)
    await anext(stream)  # warm: the generators and the one timer exist now
    gc.collect()
    before = len(gc.get_objects())
    for i in range(20_000):
        queue.put_nowait(i)
        assert await anext(stream) == i
    gc.collect()
    # A timer per event (asyncio.timeout around each wait) leaves 40,000 or more here.
    assert len(gc.get_objects()) - before < 500
    await stream.aclose()  # type: ignore[attr-defined]


async def test_it_ends_at_the_deadline_while_waiting_for_an_event() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    stream = until(_in(0.2), _endless(queue))
    # No event ever comes: the wait is cut at the deadline, and the stream simply ends.
    assert [item async for item in stream] == []


async def test_it_ends_after_the_event_being_handled_when_the_deadline_passes_meanwhile() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    stream = until(_in(0.2), _endless(queue))
    queue.put_nowait(1)
    queue.put_nowait(2)
    assert await anext(stream) == 1
    await asyncio.sleep(0.4)  # the consumer is busy with event 1 past the deadline
    got = [item async for item in stream]
    assert got == []  # event 2 is not delivered: the token had expired
    assert queue.qsize() == 1


async def test_a_cancellation_from_outside_still_propagates() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    stream = until(_in(3600), _endless(queue))
    consumer = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    consumer.cancel()
    results = await asyncio.gather(consumer, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)


async def test_an_expired_deadline_yields_nothing() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    queue.put_nowait(1)
    assert [item async for item in until(_in(-1), _endless(queue))] == []


async def test_a_deadline_moved_later_meanwhile_keeps_the_stream_open() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    deadline = _in(0.2)
    stream = until(lambda: deadline, _endless(queue))
    queue.put_nowait(1)
    assert await anext(stream) == 1
    deadline = _in(3600)  # a renewed token, before the old moment came
    await asyncio.sleep(0.4)
    queue.put_nowait(2)
    assert await anext(stream) == 2
    await stream.aclose()  # type: ignore[attr-defined]
