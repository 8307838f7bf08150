"""SQL for webhooks, deliveries and attempts (``public.webhook*``). Values are always
parameters, bound by name; every statement is a constant, its column lists the fields of
the models (:mod:`fortemi.platform.sql`)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import asyncpg

from fortemi.platform.database import Connection
from fortemi.platform.errors import NotFound
from fortemi.platform.sql import Query, Table
from fortemi.webhooks.models import Attempt, Delivery, Webhook

__all__ = ["WebhookRepository"]

# Declared once: the columns are the fields of Webhook, Delivery and Attempt.
WEBHOOK = Table("public.webhook", Webhook)
DELIVERY = Table("public.webhook_delivery", Delivery)
ATTEMPT = Table("public.webhook_attempt", Attempt)

_INSERT = WEBHOOK.query("""
INSERT INTO public.webhook (id, memory, url, event_types, description, secret_ciphertext,
                            created_by)
VALUES (:id, :memory, :url, :event_types, :description, :secret_ciphertext, :created_by)
RETURNING {columns}
""")

_GET = WEBHOOK.query("SELECT {columns} FROM public.webhook WHERE id = :id AND memory = :memory")
_LIST = WEBHOOK.query(
    "SELECT {columns} FROM public.webhook WHERE memory = :memory ORDER BY created_at, id"
)
_FOR_MEMORIES = WEBHOOK.query(
    "SELECT {columns} FROM public.webhook WHERE memory = ANY(:memories::text[])"
)
_DELETE = Query("DELETE FROM public.webhook WHERE id = :id AND memory = :memory RETURNING id")

_INSERT_DELIVERY = Query("""
INSERT INTO public.webhook_delivery (id, webhook_id, event_id, event_type, body)
VALUES (:id, :webhook_id, :event_id, :event_type, :body)
ON CONFLICT (webhook_id, event_id) DO NOTHING
RETURNING id
""")
_SET_JOB = Query("UPDATE public.webhook_delivery SET job_id = :job_id WHERE id = :id")

_LOAD = Query("""
SELECT d.id AS delivery_id, d.event_type, d.event_id, d.body, d.status,
       w.id AS webhook_id, w.url, w.secret_ciphertext
FROM public.webhook_delivery d JOIN public.webhook w ON w.id = d.webhook_id
WHERE d.id = :id
""")

# ``at`` is the database's clock (the column default), not the caller's.
_INSERT_ATTEMPT = Query("""
INSERT INTO public.webhook_attempt (delivery_id, attempt, outcome, status_code, failure_class,
                                   code, duration_ms, response_excerpt)
SELECT :delivery_id, :attempt, :outcome, :status_code, :failure_class, :code, :duration_ms,
       :response_excerpt
WHERE EXISTS (SELECT 1 FROM public.webhook_delivery WHERE id = :delivery_id)
""")
_FINISH_DELIVERY = Query("""
UPDATE public.webhook_delivery SET status = :status, finished_at = now()
WHERE id = :id AND status = 'pending'
""")

_DELIVERIES = DELIVERY.query("""
SELECT {columns} FROM public.webhook_delivery
WHERE webhook_id = :webhook_id
  AND (:after_at::timestamptz IS NULL OR (created_at, id) < (:after_at, :after_id::uuid))
ORDER BY created_at DESC, id DESC
LIMIT :limit
""")
_ATTEMPTS = ATTEMPT.query("""
SELECT delivery_id, {columns}
FROM public.webhook_attempt WHERE delivery_id = ANY(:ids::uuid[])
ORDER BY delivery_id, attempt, id
""")


class WebhookRepository:
    async def insert(
        self,
        conn: Connection,
        webhook_id: UUID,
        memory: str,
        url: str,
        event_types: Sequence[str],
        description: str | None,
        sealed_secret: bytes,
        created_by: str,
    ) -> Webhook:
        try:
            args = _INSERT.args(
                id=webhook_id,
                memory=memory,
                url=url,
                event_types=list(event_types),
                description=description,
                secret_ciphertext=sealed_secret,
                created_by=created_by,
            )
            row = await conn.fetchrow(_INSERT.sql, *args)
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {memory!r} does not exist", memory=memory) from exc
        if row is None:
            raise RuntimeError("INSERT ... RETURNING into webhook returned no row")
        return WEBHOOK.from_record(row)

    async def get(self, conn: Connection, webhook_id: UUID, memory: str) -> Webhook | None:
        row = await conn.fetchrow(_GET.sql, *_GET.args(id=webhook_id, memory=memory))
        return WEBHOOK.from_record(row) if row else None

    async def list(self, conn: Connection, memory: str) -> builtins.list[Webhook]:
        return WEBHOOK.from_records(await conn.fetch(_LIST.sql, *_LIST.args(memory=memory)))

    async def for_memories(
        self, conn: Connection, memories: Sequence[str]
    ) -> builtins.list[Webhook]:
        args = _FOR_MEMORIES.args(memories=list(memories))
        return WEBHOOK.from_records(await conn.fetch(_FOR_MEMORIES.sql, *args))

    async def delete(self, conn: Connection, webhook_id: UUID, memory: str) -> bool:
        args = _DELETE.args(id=webhook_id, memory=memory)
        return await conn.fetchval(_DELETE.sql, *args) is not None

    async def insert_delivery(
        self,
        conn: Connection,
        delivery_id: UUID,
        webhook_id: UUID,
        event_id: str,
        event_type: str,
        body: bytes,
    ) -> bool:
        """Whether it was new (a (webhook, event) pair is delivered once)."""
        args = _INSERT_DELIVERY.args(
            id=delivery_id,
            webhook_id=webhook_id,
            event_id=event_id,
            event_type=event_type,
            body=body,
        )
        inserted = await conn.fetchval(_INSERT_DELIVERY.sql, *args)
        return inserted is not None

    async def set_job(self, conn: Connection, delivery_id: UUID, job_id: UUID) -> None:
        await conn.execute(_SET_JOB.sql, *_SET_JOB.args(id=delivery_id, job_id=job_id))

    async def load(self, conn: Connection, delivery_id: UUID) -> asyncpg.Record | None:
        """The delivery with its webhook's URL and sealed secret; None once either is gone."""
        return await conn.fetchrow(_LOAD.sql, *_LOAD.args(id=delivery_id))

    async def record_attempt(
        self, conn: Connection, delivery_id: UUID, attempt: Attempt, final_status: str | None
    ) -> None:
        args = _INSERT_ATTEMPT.args(ATTEMPT.binds(attempt, omit=("at",)), delivery_id=delivery_id)
        await conn.execute(_INSERT_ATTEMPT.sql, *args)
        if final_status is not None:
            finish = _FINISH_DELIVERY.args(id=delivery_id, status=final_status)
            await conn.execute(_FINISH_DELIVERY.sql, *finish)

    async def deliveries(
        self,
        conn: Connection,
        webhook_id: UUID,
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> builtins.list[Delivery]:
        at, last_id = after if after is not None else (None, None)
        args = _DELIVERIES.args(webhook_id=webhook_id, after_at=at, after_id=last_id, limit=limit)
        return DELIVERY.from_records(await conn.fetch(_DELIVERIES.sql, *args))

    async def attempts(
        self, conn: Connection, delivery_ids: Sequence[UUID]
    ) -> dict[UUID, builtins.list[Attempt]]:
        found: dict[UUID, builtins.list[Attempt]] = {}
        rows = await conn.fetch(_ATTEMPTS.sql, *_ATTEMPTS.args(ids=list(delivery_ids)))
        for row in rows:
            found.setdefault(row["delivery_id"], []).append(ATTEMPT.from_record(row))
        return found
