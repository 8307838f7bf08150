"""The event bus on the real Redis: ordered, resumable, bounded, and honest about gaps."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

import pytest
import redis.asyncio as redis

from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import Event, EventBus, ResyncRequired


@pytest.fixture
async def client(service_urls: ServiceUrls) -> AsyncIterator[redis.Redis]:
    connection = redis.Redis.from_url(service_urls.redis)
    yield connection
    await connection.aclose()


def _stream() -> str:
    return f"test:events:{uuid.uuid4().hex}"


def _event(i: int) -> Event:
    return Event(type="test.tick", entity_type="test", entity_id=str(i), payload={"i": i})


async def _take(bus: EventBus, after: str, n: int) -> list[Event]:
    events: list[Event] = []
    stream = bus.subscribe(after=after)
    try:
        async for event in stream:
            events.append(event)
            if len(events) == n:
                break
    finally:
        await stream.aclose()
    return events


async def test_resuming_replays_in_order_and_a_trimmed_position_asks_for_resync(
    client: redis.Redis,
) -> None:
    bus = EventBus(client, max_len=3, stream=_stream(), approximate=False, block_ms=100)
    ids = [await bus.publish(_event(i)) for i in range(5)]  # keeps only the last three
    replayed = await _take(bus, ids[2], 2)
    assert [e.entity_id for e in replayed] == ["3", "4"]
    assert [e.id for e in replayed] == ids[3:]
    assert replayed[0].payload == {"i": 3}
    assert replayed[0].version == 1
    with pytest.raises(ResyncRequired):
        await _take(bus, ids[0], 1)


async def test_a_batch_publish_appends_in_order_and_replays_like_single_ones(
    client: redis.Redis,
) -> None:
    bus = EventBus(client, stream=_stream(), block_ms=100)
    first = await bus.publish(_event(0))
    ids = await bus.publish_many([_event(i) for i in range(1, 5)])
    assert await bus.publish_many([]) == []
    positions = [tuple(map(int, i.split("-"))) for i in [first, *ids]]
    assert positions == sorted(set(positions))  # strictly increasing, first included
    replayed = await _take(bus, first, 4)
    assert [(e.id, e.entity_id) for e in replayed] == list(zip(ids, "1234", strict=True))


async def _started(bus: EventBus, n: int) -> list[AsyncGenerator[Event, None]]:
    """``n`` live subscriptions whose reader is reading (a first event proves it)."""
    streams = [bus.subscribe() for _ in range(n)]
    pending = [asyncio.create_task(anext(stream)) for stream in streams]
    await asyncio.sleep(0)
    for _ in range(100):
        await bus.publish(_event(-1))
        done, _ = await asyncio.wait(pending, timeout=0.05)
        if len(done) == len(pending):
            break
    else:
        pytest.fail("subscriptions never started receiving")
    return streams


async def _drain(stream: AsyncGenerator[Event, None], n: int) -> None:
    for _ in range(n):
        await anext(stream)


async def _close(streams: list[AsyncGenerator[Event, None]]) -> None:
    for stream in streams:
        await stream.aclose()


async def test_one_reader_serves_every_subscriber_of_a_process(client: redis.Redis) -> None:
    bus = EventBus(client, stream=_stream(), block_ms=100)
    before = len(await client.client_list())
    streams = await _started(bus, 50)
    try:
        assert bus.subscribers == 50
        # Fifty subscriptions, one blocking XREAD: Redis connections grow by ~1, not 50.
        assert len(await client.client_list()) - before <= 2
        published = await bus.publish(_event(7))
        for stream in streams:
            event = await anext(stream)
            while event.id != published:
                event = await anext(stream)
            assert event.payload == {"i": 7}
    finally:
        await _close(streams)
    assert bus.subscribers == 0


async def test_a_slow_subscriber_catches_up_from_the_stream_without_holding_others_back(
    client: redis.Redis,
) -> None:
    bus = EventBus(client, stream=_stream(), block_ms=100, subscriber_buffer=4)
    slow, fast = await _started(bus, 2)
    try:
        ids = [await bus.publish(_event(i)) for i in range(20)]
        # The fast one gets all twenty while the slow one has not read a single event.
        got_fast: list[str] = []
        while len(got_fast) < 20:
            event = await anext(fast)
            if event.entity_id != "-1":
                got_fast.append(event.id)
        assert got_fast == ids
        # The slow one overflowed its buffer of 4 long ago, yet misses nothing, in order.
        got_slow: list[str] = []
        while len(got_slow) < 20:
            event = await anext(slow)
            if event.entity_id != "-1":
                got_slow.append(event.id)
        assert got_slow == ids
    finally:
        await _close([slow, fast])


async def test_a_subscriber_that_falls_behind_the_buffer_is_told_to_resync(
    client: redis.Redis,
) -> None:
    bus = EventBus(client, stream=_stream(), block_ms=100, subscriber_buffer=2, max_len=5,
                   approximate=False)  # fmt: skip
    [slow] = await _started(bus, 1)
    try:
        for i in range(30):
            await bus.publish(_event(i))
        with pytest.raises(ResyncRequired):
            await _drain(slow, 40)
    finally:
        await _close([slow])


async def test_a_quiet_stream_longer_than_the_socket_timeout_ends_no_subscription(
    service_urls: ServiceUrls,
) -> None:
    # redis-py's default socket timeout (5 s) is shorter than a long blocking read; a
    # client with a 0.2 s timeout and a 1 s block hits that case at once.
    impatient = redis.Redis.from_url(service_urls.redis, socket_timeout=0.2)
    try:
        bus = EventBus(impatient, stream=_stream(), block_ms=1000)
        [stream] = await _started(bus, 1)
        await asyncio.sleep(1.5)  # several timed-out reads, no events
        published = await bus.publish(_event(42))
        event = await anext(stream)
        while event.id != published:
            event = await anext(stream)
        assert event.payload == {"i": 42}
        await _close([stream])
    finally:
        await impatient.aclose()
