"""Webhooks of a memory: registering, listing, deleting; fanning events out to deliveries.

A delivery is written once per (webhook, event) with the exact body to send, and carried
out by a ``WebhookDelivery`` job enqueued in the same transaction: so it retries with
backoff and survives crashes like any job, and an event seen twice (a fan-out that
crashed before acknowledging it) is not delivered twice.

Errors: BadUserInput (URL, event types, secret; TargetRefused for a private target),
NotFound (no such webhook in the memory, no such memory).
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Sequence
from uuid import UUID, uuid4

from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.events import Event
from fortemi.platform.jobs.models import Job, JobSpec
from fortemi.platform.jobs.service import JobService
from fortemi.platform.pages import Page, rows_to_fetch
from fortemi.platform.sealing import SecretBox
from fortemi.platform.sql import KeysetCursor
from fortemi.webhooks.models import (
    Attempt,
    Delivery,
    Webhook,
    event_body,
    validate_event_types,
)
from fortemi.webhooks.repository import WebhookRepository
from fortemi.webhooks.signing import new_secret
from fortemi.webhooks.targets import TargetPolicy, check_url, resolve

__all__ = ["WEBHOOK_DELIVERY", "DeliveryPage", "WebhookService", "is_delivery_event"]

WEBHOOK_DELIVERY = "WebhookDelivery"
MIN_SECRET_CHARS, MAX_SECRET_CHARS = 16, 256
MAX_DESCRIPTION_CHARS = 500
DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE = 20, 100
_CURSOR = KeysetCursor("d1")


DeliveryPage = Page[tuple[Delivery, list[Attempt]]]  # each delivery with its attempts


def is_delivery_event(event: Event) -> bool:
    """Whether ``event`` is about a webhook delivery job: never fanned out, or every
    delivery would announce itself to the webhooks that asked for ``job.*``, forever."""
    return event.entity_type == "job" and event.payload.get("jobType") == WEBHOOK_DELIVERY


class WebhookService:
    def __init__(
        self, db: Database, box: SecretBox, jobs: JobService, *, policy: TargetPolicy
    ) -> None:
        self._db = db
        self._box = box
        self._jobs = jobs
        self._policy = policy
        self._repo = WebhookRepository()

    async def create(
        self,
        memory: str,
        *,
        url: str,
        event_types: Sequence[str],
        actor: str,
        secret: str | None = None,
        description: str | None = None,
    ) -> tuple[Webhook, str | None]:
        """Register a webhook; returns it with its signing secret when Fortemi made one
        (shown this once; a secret the caller chose is not echoed back).

        The URL must be http(s), without credentials, and its host must resolve to
        addresses webhooks may call now (checked again before every attempt).
        """
        parts = check_url(url)
        types = validate_event_types(event_types)
        if secret is not None and not (
            MIN_SECRET_CHARS <= len(secret) <= MAX_SECRET_CHARS and secret.isprintable()
        ):
            raise BadUserInput(
                f"A secret is {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} printable characters; "
                "leave it out to have one generated",
                field="secret",
            )
        if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
            raise BadUserInput(
                f"A description is at most {MAX_DESCRIPTION_CHARS} characters", field="description"
            )
        port = parts.port or (443 if parts.scheme == "https" else 80)
        await resolve(parts.hostname or "", port, self._policy)
        generated = new_secret() if secret is None else None
        webhook_id = uuid4()
        sealed = self._box.seal((secret or generated or "").encode(), webhook_id.bytes)
        async with self._db.shared_transaction() as conn:
            webhook = await self._repo.insert(
                conn, webhook_id, memory, url, types, description, sealed, actor
            )
        return webhook, generated

    async def get(self, memory: str, webhook_id: UUID) -> Webhook | None:
        async with self._db.shared_transaction() as conn:
            return await self._repo.get(conn, webhook_id, memory)

    async def list(self, memory: str) -> builtins.list[Webhook]:
        async with self._db.shared_transaction() as conn:
            return await self._repo.list(conn, memory)

    async def delete(self, memory: str, webhook_id: UUID) -> None:
        """Delete the webhook with its deliveries; pending delivery jobs then find it gone
        and end without sending. NotFound if the memory has no such webhook."""
        async with self._db.shared_transaction() as conn:
            if not await self._repo.delete(conn, webhook_id, memory):
                raise NotFound(f"No webhook {webhook_id} in this memory", id=str(webhook_id))

    async def deliveries(
        self, webhook_id: UUID, *, first: int | None, after: str | None
    ) -> DeliveryPage:
        """A page of the webhook's deliveries, newest first, each with its attempts."""
        if first is not None and (isinstance(first, bool) or first < 0):
            raise BadUserInput("first must be zero or a positive integer", field="first")
        limit = DEFAULT_PAGE_SIZE if first is None else min(first, MAX_PAGE_SIZE)
        position = None if after is None else _CURSOR.decode(after)
        async with self._db.shared_transaction() as conn:
            found = await self._repo.deliveries(
                conn, webhook_id, _CURSOR.through(position), rows_to_fetch(limit, position)
            )
            page = _CURSOR.page(found, limit=limit, after=position)
            attempts = await self._repo.attempts(conn, [d.id for _, d in page.items])
        return page.map(lambda d: (d, attempts.get(d.id, [])))

    async def fan_out(self, events: Sequence[Event]) -> builtins.list[Job]:
        """Write a delivery and its job for every (webhook, event) that wants it and has
        none yet; returns the new jobs, committed and announced (the caller dispatches)."""
        relevant = [e for e in events if e.memory is not None and not is_delivery_event(e)]
        if not relevant:
            return []
        created: builtins.list[Job] = []
        async with self._db.shared_transaction() as conn:
            by_memory: dict[str, builtins.list[Webhook]] = defaultdict(builtins.list)
            for hook in await self._repo.for_memories(
                conn, sorted({e.memory for e in relevant if e.memory})
            ):
                by_memory[hook.memory].append(hook)
            for event in relevant:
                for hook in by_memory.get(event.memory or "", ()):
                    if hook.wants(event.type):
                        job = await self._add_delivery(conn, hook, event)
                        if job is not None:
                            created.append(job)
        await self._jobs.announce_created(created)
        return created

    async def _add_delivery(self, conn: Connection, hook: Webhook, event: Event) -> Job | None:
        delivery_id = uuid4()
        if not await self._repo.insert_delivery(
            conn,
            delivery_id,
            hook.id,
            event.id,
            event.type,
            event_body(event),
        ):
            return None  # this event reached this webhook before
        job, _ = await self._jobs.enqueue(
            conn,
            JobSpec(
                type=WEBHOOK_DELIVERY,
                memory=hook.memory,
                payload={"delivery_id": str(delivery_id)},
            ),
        )
        await self._repo.set_job(conn, delivery_id, job.id)
        return job
