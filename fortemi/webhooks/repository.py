"""SQL for webhooks, deliveries and attempts (``public.webhook*``). Values are always
parameters; every statement is a constant."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import asyncpg

from fortemi.platform.database import Connection
from fortemi.platform.errors import NotFound
from fortemi.webhooks.models import Attempt, Delivery, Webhook

__all__ = ["WebhookRepository"]

_W_COLUMNS = "id, memory, url, event_types, description, created_by, created_at"
_D_COLUMNS = "id, webhook_id, event_id, event_type, job_id, status, created_at, finished_at"

_INSERT = f"""
INSERT INTO public.webhook (id, memory, url, event_types, description, secret_ciphertext,
                            created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING {_W_COLUMNS}
"""  # noqa: S608 - constants only

_GET = f"SELECT {_W_COLUMNS} FROM public.webhook WHERE id = $1 AND memory = $2"  # noqa: S608
_LIST = f"""
SELECT {_W_COLUMNS} FROM public.webhook WHERE memory = $1 ORDER BY created_at, id
"""  # noqa: S608 - constants only
_FOR_MEMORIES = f"""
SELECT {_W_COLUMNS} FROM public.webhook WHERE memory = ANY($1::text[])
"""  # noqa: S608 - constants only
_DELETE = "DELETE FROM public.webhook WHERE id = $1 AND memory = $2 RETURNING id"

_INSERT_DELIVERY = """
INSERT INTO public.webhook_delivery (id, webhook_id, event_id, event_type, body)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (webhook_id, event_id) DO NOTHING
RETURNING id
"""
_SET_JOB = "UPDATE public.webhook_delivery SET job_id = $2 WHERE id = $1"

_LOAD = """
SELECT d.id AS delivery_id, d.event_type, d.event_id, d.body, d.status,
       w.id AS webhook_id, w.url, w.secret_ciphertext
FROM public.webhook_delivery d JOIN public.webhook w ON w.id = d.webhook_id
WHERE d.id = $1
"""

_INSERT_ATTEMPT = """
INSERT INTO public.webhook_attempt (delivery_id, attempt, outcome, status_code, failure_class,
                                   code, duration_ms, response_excerpt)
SELECT $1, $2, $3, $4, $5, $6, $7, $8
WHERE EXISTS (SELECT 1 FROM public.webhook_delivery WHERE id = $1)
"""
_FINISH_DELIVERY = """
UPDATE public.webhook_delivery SET status = $2, finished_at = now()
WHERE id = $1 AND status = 'pending'
"""

_DELIVERIES = f"""
SELECT {_D_COLUMNS} FROM public.webhook_delivery
WHERE webhook_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4
"""  # noqa: S608 - constants only
_ATTEMPTS = """
SELECT delivery_id, attempt, at, outcome, status_code, failure_class, code, duration_ms,
       response_excerpt
FROM public.webhook_attempt WHERE delivery_id = ANY($1::uuid[])
ORDER BY delivery_id, attempt, id
"""


def _webhook(row: asyncpg.Record) -> Webhook:
    return Webhook(
        id=row["id"],
        memory=row["memory"],
        url=row["url"],
        event_types=tuple(row["event_types"]),
        description=row["description"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


def _delivery(row: asyncpg.Record) -> Delivery:
    return Delivery(
        id=row["id"],
        webhook_id=row["webhook_id"],
        event_id=row["event_id"],
        event_type=row["event_type"],
        job_id=row["job_id"],
        status=row["status"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
    )


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
            row = await conn.fetchrow(
                _INSERT,
                webhook_id,
                memory,
                url,
                list(event_types),
                description,
                sealed_secret,
                created_by,
            )
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {memory!r} does not exist", memory=memory) from exc
        if row is None:
            raise RuntimeError("INSERT ... RETURNING into webhook returned no row")
        return _webhook(row)

    async def get(self, conn: Connection, webhook_id: UUID, memory: str) -> Webhook | None:
        row = await conn.fetchrow(_GET, webhook_id, memory)
        return _webhook(row) if row else None

    async def list(self, conn: Connection, memory: str) -> builtins.list[Webhook]:
        return [_webhook(row) for row in await conn.fetch(_LIST, memory)]

    async def for_memories(
        self, conn: Connection, memories: Sequence[str]
    ) -> builtins.list[Webhook]:
        return [_webhook(row) for row in await conn.fetch(_FOR_MEMORIES, list(memories))]

    async def delete(self, conn: Connection, webhook_id: UUID, memory: str) -> bool:
        return await conn.fetchval(_DELETE, webhook_id, memory) is not None

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
        inserted = await conn.fetchval(
            _INSERT_DELIVERY, delivery_id, webhook_id, event_id, event_type, body
        )
        return inserted is not None

    async def set_job(self, conn: Connection, delivery_id: UUID, job_id: UUID) -> None:
        await conn.execute(_SET_JOB, delivery_id, job_id)

    async def load(self, conn: Connection, delivery_id: UUID) -> asyncpg.Record | None:
        """The delivery with its webhook's URL and sealed secret; None once either is gone."""
        return await conn.fetchrow(_LOAD, delivery_id)

    async def record_attempt(
        self, conn: Connection, delivery_id: UUID, attempt: Attempt, final_status: str | None
    ) -> None:
        await conn.execute(
            _INSERT_ATTEMPT,
            delivery_id,
            attempt.attempt,
            attempt.outcome,
            attempt.status_code,
            attempt.failure_class,
            attempt.code,
            attempt.duration_ms,
            attempt.response_excerpt,
        )
        if final_status is not None:
            await conn.execute(_FINISH_DELIVERY, delivery_id, final_status)

    async def deliveries(
        self,
        conn: Connection,
        webhook_id: UUID,
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> builtins.list[Delivery]:
        at, last_id = after if after is not None else (None, None)
        rows = await conn.fetch(_DELIVERIES, webhook_id, at, last_id, limit)
        return [_delivery(row) for row in rows]

    async def attempts(
        self, conn: Connection, delivery_ids: Sequence[UUID]
    ) -> dict[UUID, builtins.list[Attempt]]:
        found: dict[UUID, builtins.list[Attempt]] = {}
        for row in await conn.fetch(_ATTEMPTS, list(delivery_ids)):
            found.setdefault(row["delivery_id"], []).append(
                Attempt(
                    attempt=row["attempt"],
                    at=row["at"],
                    outcome=row["outcome"],
                    status_code=row["status_code"],
                    failure_class=row["failure_class"],
                    code=row["code"],
                    duration_ms=row["duration_ms"],
                    response_excerpt=row["response_excerpt"],
                )
            )
        return found
