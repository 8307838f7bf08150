"""The event bus on the real Redis: ordered, resumable, bounded, and honest about gaps."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis

from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import Event, EventBus, ResyncRequired


@pytest.fixture
async def client(service_urls: ServiceUrls) -> AsyncIterator[redis.Redis]:
    connection = redis.Redis.from_url(service_urls.redis)
    yield connection
    await connection.aclose()


def _event(i: int) -> Event:
    return Event(type="test.tick", entity_type="test", entity_id=str(i), payload={"i": i})


async def _take(bus: EventBus, after: str, n: int) -> list[Event]:
    events: list[Event] = []
    stream = bus.subscribe(after=after, block_ms=100)
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
    bus = EventBus(client, max_len=3, stream=f"test:events:{uuid.uuid4().hex}", approximate=False)
    ids = [await bus.publish(_event(i)) for i in range(5)]  # keeps only the last three
    replayed = await _take(bus, ids[2], 2)
    assert [e.entity_id for e in replayed] == ["3", "4"]
    assert [e.id for e in replayed] == ids[3:]
    assert replayed[0].payload == {"i": 3}
    assert replayed[0].version == 1
    with pytest.raises(ResyncRequired):
        await _take(bus, ids[0], 1)
