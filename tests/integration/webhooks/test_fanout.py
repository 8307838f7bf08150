"""The fan-out: each event becomes at most one delivery per webhook, whoever handles it,
however often; an event it cannot handle is skipped, never a block on the ones after."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

import pytest
import redis.asyncio as redis

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import Event, EventBus
from fortemi.platform.jobs.models import Job
from fortemi.platform.jobs.service import JobService
from fortemi.platform.sealing import SecretBox
from fortemi.platform.settings import Settings
from fortemi.runtime import job_registry
from fortemi.webhooks.fanout import WebhookFanout
from fortemi.webhooks.service import WebhookService
from fortemi.webhooks.targets import TargetPolicy


@pytest.fixture
async def client(service_urls: ServiceUrls) -> AsyncIterator[redis.Redis]:
    connection = redis.Redis.from_url(service_urls.redis)
    yield connection
    await connection.aclose()


@pytest.fixture
def webhooks(db: Database, settings: Settings) -> WebhookService:
    jobs = JobService(db, job_registry(settings)(db))
    return WebhookService(
        db, SecretBox.from_settings(settings), jobs, policy=TargetPolicy.from_cidrs(["127.0.0.0/8"])
    )


class _Dispatched:
    def __init__(self) -> None:
        self.jobs: list[Job] = []

    async def __call__(self, jobs: Sequence[Job]) -> None:
        self.jobs.extend(jobs)


async def _deliveries(db: Database, webhook_id: uuid.UUID) -> list[str]:
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT event_type FROM public.webhook_delivery WHERE webhook_id = $1 "
            "ORDER BY event_id",
            webhook_id,
        )
    return [row["event_type"] for row in rows]


def _note_event(memory: str, kind: str) -> Event:
    return Event(type=f"note.{kind}", entity_type="note", entity_id="n1", memory=memory)


async def test_events_taken_by_a_fanout_that_died_are_claimed_by_another_and_sent_once(
    client: redis.Redis, webhooks: WebhookService, db: Database, memory: str
) -> None:
    stream = f"test:fanout:{uuid.uuid4().hex}"
    hook, _ = await webhooks.create(
        memory, url="http://127.0.0.1:9/hook", event_types=["note.*"], actor="test"
    )
    dispatched = _Dispatched()
    dead = WebhookFanout(client, webhooks, dispatched, stream=stream, block_ms=100)
    survivor = WebhookFanout(
        client, webhooks, dispatched, stream=stream, block_ms=100, claim_idle_ms=0
    )
    await dead.step()  # creates the group; nothing to read yet
    bus = EventBus(client, stream=stream)
    for kind in ("created", "updated"):
        await bus.publish(_note_event(memory, kind))
    await bus.publish(Event(type="note.created", entity_type="note", entity_id="x", memory="other"))

    # The first fan-out reads the batch and dies before handling it.
    taken = await dead._read(">", block=False)
    assert len(taken) == 3

    assert await survivor.step() == 3  # claims the dead one's idle events
    assert await _deliveries(db, hook.id) == ["note.created", "note.updated"]
    assert len(dispatched.jobs) == 2

    # The dead one comes back and handles its pending batch after all: no second delivery.
    dead._own_pending = True
    await dead.step()
    assert await _deliveries(db, hook.id) == ["note.created", "note.updated"]
    assert len(dispatched.jobs) == 2
    await client.delete(stream)


class _Choking(WebhookService):
    """A fan-out service that cannot handle one kind of event (a bug, say)."""

    async def fan_out(self, events: Sequence[Event]) -> list[Job]:
        if any(event.type == "note.choke" for event in events):
            raise RuntimeError("cannot handle this one")
        return await super().fan_out(events)


async def test_an_event_the_fanout_cannot_handle_is_skipped_and_the_rest_delivered(
    client: redis.Redis, db: Database, settings: Settings, memory: str
) -> None:
    stream = f"test:fanout:{uuid.uuid4().hex}"
    jobs = JobService(db, job_registry(settings)(db))
    choking = _Choking(
        db, SecretBox.from_settings(settings), jobs, policy=TargetPolicy.from_cidrs(["127.0.0.0/8"])
    )
    hook, _ = await choking.create(
        memory, url="http://127.0.0.1:9/hook", event_types=["*"], actor="test"
    )
    fanout = WebhookFanout(client, choking, _Dispatched(), stream=stream, block_ms=100)
    await fanout.step()
    bus = EventBus(client, stream=stream)
    for kind in ("created", "choke", "deleted"):
        await bus.publish(_note_event(memory, kind))
    handled = 0
    for _ in range(3):
        handled += await fanout.step()
    assert handled == 3
    assert sorted(await _deliveries(db, hook.id)) == ["note.created", "note.deleted"]
    pending = await client.xpending(stream, "fortemi:webhooks")
    assert pending["pending"] == 0  # all acknowledged, the choking one included
    await client.delete(stream)
