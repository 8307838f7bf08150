"""All SQL for jobs and pauses (``public.job``, ``public.job_pause``).

Table names are schema-qualified because :meth:`JobRepository.insert` runs in the caller's
transaction, which may be a memory transaction whose search path starts elsewhere. Values
always travel as ``$n`` parameters; query text is spliced only from this module's constants
and, for list filters, from fixed fragments (those lines carry ``noqa: S608``).

Every time is PostgreSQL's (``now()``: the transaction's start, so one statement stamps one
instant; ``clock_timestamp()`` where rows written in one transaction must keep their
order), never the Python host's, so workers on several hosts agree. The asyncpg errors a
caller can cause here (an unknown memory, a second pending job for a dedupe key) are
translated here, once.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from fortemi.platform.database import Connection
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.jobs.models import FailureClass, Job, JobStatus, Tier
from fortemi.platform.sql import Where

__all__ = ["JobInsert", "JobPause", "JobRepository", "ListQuery", "LiveRow", "StatsRow"]

_FIELDS = (
    "id", "memory", "type", "tier", "priority", "status", "payload", "attempts",
    "max_attempts", "next_attempt_at", "progress", "progress_message", "failure_class",
    "failure_code", "result", "dedupe_key", "requested_by", "created_at", "started_at",
    "finished_at",
)  # fmt: skip
_COLUMNS = ", ".join(_FIELDS)
_J_COLUMNS = ", ".join(f"j.{name}" for name in _FIELDS)

# The new row takes no lock on an existing one: ON CONFLICT names the partial unique index
# (one pending job per dedupe key), and a concurrent inserter of the same key makes this
# statement wait for its transaction and then do nothing. clock_timestamp() keeps jobs
# enqueued in one transaction in order.
_INSERT = f"""
INSERT INTO public.job (id, memory, type, tier, priority, payload, max_attempts, dedupe_key,
                        requested_by, next_attempt_at, created_at, updated_at)
SELECT $1::uuid, $2::text, $3::text, $4::text, $5::smallint, $6::jsonb, $7::integer,
       $8::text, $9::text, t.at, t.at, t.at
FROM (SELECT clock_timestamp() AS at) AS t
ON CONFLICT (dedupe_key) WHERE status = 'pending' AND dedupe_key IS NOT NULL DO NOTHING
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

_PENDING_BY_KEY = f"SELECT {_COLUMNS} FROM public.job WHERE dedupe_key = $1 AND status = 'pending'"  # noqa: S608

# _INSERT for many jobs in one statement, in the order given (one clock reading for all).
# A key held by a pending job, or by an earlier row of the same batch, is skipped.
_INSERT_MANY = f"""
INSERT INTO public.job (id, memory, type, tier, priority, payload, max_attempts, dedupe_key,
                        requested_by, next_attempt_at, created_at, updated_at)
SELECT j.id, j.memory, j.type, j.tier, j.priority, j.payload::jsonb, j.max_attempts,
       j.dedupe_key, j.requested_by, t.at, t.at, t.at
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::smallint[], $6::text[],
            $7::integer[], $8::text[], $9::text[])
     WITH ORDINALITY AS j(id, memory, type, tier, priority, payload, max_attempts, dedupe_key,
                          requested_by, n),
     (SELECT clock_timestamp() AS at) AS t
ORDER BY j.n
ON CONFLICT (dedupe_key) WHERE status = 'pending' AND dedupe_key IS NOT NULL DO NOTHING
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

_PENDING_BY_KEYS = (
    f"SELECT {_COLUMNS} FROM public.job WHERE dedupe_key = ANY($1::text[]) AND status = 'pending'"  # noqa: S608
)

_GET = f"SELECT {_COLUMNS} FROM public.job WHERE id = $1"  # noqa: S608

# SKIP LOCKED: concurrent claimers each take a different row instead of queueing on the
# best one. The ORDER BY matches the job_claim index for one tier, which is why the caller
# asks tier by tier. A new attempt starts its progress from zero.
_CLAIM = f"""
WITH candidate AS (
    SELECT c.id FROM public.job AS c
    WHERE c.status = 'pending' AND c.tier = $1 AND c.next_attempt_at <= now()
      AND NOT EXISTS (
          SELECT 1 FROM public.job_pause AS p WHERE p.memory IS NULL OR p.memory = c.memory)
    ORDER BY c.priority DESC, c.next_attempt_at, c.created_at
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED
)
UPDATE public.job AS j
SET status = 'running', attempts = j.attempts + 1, lease_owner = $2,
    lease_expires_at = now() + make_interval(secs => $3), progress = 0,
    progress_message = NULL, started_at = coalesce(j.started_at, now()), updated_at = now()
FROM candidate
WHERE j.id = candidate.id
RETURNING {_J_COLUMNS}
"""  # noqa: S608 - constants only

_HEARTBEAT = """
UPDATE public.job SET lease_expires_at = now() + make_interval(secs => $3)
WHERE id = $1 AND status = 'running' AND lease_owner = $2
RETURNING true
"""

_PROGRESS = f"""
UPDATE public.job
SET progress = $3, progress_message = $4, lease_expires_at = now() + make_interval(secs => $5),
    updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_owner = $2
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

_LOCK_RUNNING = """
SELECT id, attempts, max_attempts FROM public.job
WHERE id = $1 AND status = 'running' AND lease_owner = $2
FOR UPDATE
"""

# SKIP LOCKED: a row a worker is finishing right now is that worker's to settle.
_LOCK_EXPIRED = """
SELECT id, attempts, max_attempts FROM public.job
WHERE status = 'running' AND lease_expires_at < now()
ORDER BY lease_expires_at
LIMIT $1
FOR UPDATE SKIP LOCKED
"""

_COMPLETE = f"""
UPDATE public.job
SET status = 'completed', progress = 100, result = $2::jsonb, failure_class = NULL,
    failure_code = NULL, lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
    updated_at = now()
WHERE id = $1
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

# Per row: a NULL delay fails the job for good, a number puts it back in the queue that many
# seconds from now with a new message due (enqueued_at NULL).
_SETTLE = f"""
UPDATE public.job AS j
SET status = CASE WHEN d.delay IS NULL THEN 'failed' ELSE 'pending' END,
    next_attempt_at = CASE WHEN d.delay IS NULL THEN j.next_attempt_at
                           ELSE now() + make_interval(secs => d.delay) END,
    finished_at = CASE WHEN d.delay IS NULL THEN now() END,
    failure_class = $3, failure_code = $4, lease_owner = NULL, lease_expires_at = NULL,
    enqueued_at = NULL, updated_at = now()
FROM unnest($1::uuid[], $2::float8[]) AS d(id, delay)
WHERE j.id = d.id
RETURNING {_J_COLUMNS}
"""  # noqa: S608 - constants only

# A shutdown hands a job back uncounted: the attempt was stopped by its worker, and a job
# with one attempt left must not fail for a deploy. The code says why it ran again.
_RELEASE = f"""
UPDATE public.job
SET status = 'pending', attempts = greatest(attempts - 1, 0), next_attempt_at = now(),
    failure_class = 'stale_worker', failure_code = 'worker_shutdown', lease_owner = NULL,
    lease_expires_at = NULL, enqueued_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'running' AND lease_owner = $2
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

_CANCEL = f"""
UPDATE public.job
SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
    updated_at = now()
WHERE id = $1 AND status IN ('pending', 'running')
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

# The failure fields stay: they say why the operator had to retry until the next run ends.
_RETRY = f"""
UPDATE public.job
SET status = 'pending', attempts = 0, next_attempt_at = now(), finished_at = NULL,
    enqueued_at = NULL, updated_at = now()
WHERE id = $1 AND status IN ('failed', 'cancelled')
RETURNING {_COLUMNS}
"""  # noqa: S608 - constants only

# An unsent row (enqueued_at NULL) gets a grace period: its after-commit send may be in
# flight, and sending twice would only cost a wasted wake-up, but every time.
_DUE_FOR_SEND = f"""
SELECT {_COLUMNS} FROM public.job
WHERE status = 'pending' AND next_attempt_at <= now()
  AND ((enqueued_at IS NULL AND updated_at < now() - make_interval(secs => $2))
       OR enqueued_at < now() - make_interval(secs => $1))
ORDER BY priority DESC, next_attempt_at, created_at
LIMIT $3
"""  # noqa: S608 - constants only

_MARK_SENT = """
UPDATE public.job SET enqueued_at = now() WHERE id = ANY($1::uuid[]) AND status = 'pending'
"""

_STATS = """
SELECT status, tier, count(*) AS n, min(created_at) AS oldest
FROM public.job GROUP BY status, tier
"""

# Only live jobs: the partial indexes on pending and running jobs keep this cheap however
# long the history of finished jobs grows.
_LIVE = """
SELECT type, tier, status, count(*) AS n FROM public.job
WHERE status IN ('pending', 'running') GROUP BY type, tier, status
"""

_PAUSE = """
INSERT INTO public.job_pause (memory, paused_by) VALUES ($1, $2)
ON CONFLICT ((coalesce(memory, ''))) DO NOTHING
"""

# Workers consumed the wake-ups of jobs held back by the pause and found nothing to claim;
# marking those jobs unsent lets the relay wake them now instead of after resend_after.
# Resuming everything leaves alone the jobs of memories still paused on their own.
_RESUME = """
WITH resumed AS (
    DELETE FROM public.job_pause WHERE coalesce(memory, '') = coalesce($1, '') RETURNING memory
)
UPDATE public.job AS j SET enqueued_at = NULL
FROM resumed
WHERE j.status = 'pending' AND j.enqueued_at IS NOT NULL
  AND (j.memory = resumed.memory
       OR (resumed.memory IS NULL
           AND NOT EXISTS (SELECT 1 FROM public.job_pause AS p WHERE p.memory = j.memory)))
"""

_PAUSES = "SELECT memory, paused_at, paused_by FROM public.job_pause ORDER BY memory NULLS FIRST"


@dataclass(frozen=True, slots=True)
class JobInsert:
    """A validated new job with every default filled in."""

    id: UUID
    memory: str | None
    type: str
    tier: Tier
    priority: int
    payload: dict[str, Any]
    max_attempts: int
    dedupe_key: str | None
    requested_by: str | None

    def args(self) -> tuple[Any, ...]:
        return (
            self.id, self.memory, self.type, self.tier.value, self.priority, self.payload,
            self.max_attempts, self.dedupe_key, self.requested_by,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class JobPause:
    """A pause: of one memory's jobs, or of every job when ``memory`` is None."""

    memory: str | None
    paused_at: datetime
    paused_by: str | None


@dataclass(frozen=True, slots=True)
class LiveRow:
    """How many jobs of a type and tier are pending or running."""

    type: str
    tier: Tier
    status: JobStatus
    count: int


@dataclass(frozen=True, slots=True)
class StatsRow:
    status: JobStatus
    tier: Tier
    count: int
    oldest_created_at: datetime


def _job(row: asyncpg.Record) -> Job:
    failure_class = row["failure_class"]
    return Job(
        id=row["id"],
        memory=row["memory"],
        type=row["type"],
        tier=Tier(row["tier"]),
        priority=row["priority"],
        status=JobStatus(row["status"]),
        payload=row["payload"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        next_attempt_at=row["next_attempt_at"],
        progress=row["progress"],
        progress_message=row["progress_message"],
        failure_class=None if failure_class is None else FailureClass(failure_class),
        failure_code=row["failure_code"],
        result=row["result"],
        dedupe_key=row["dedupe_key"],
        requested_by=row["requested_by"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )


@dataclass(frozen=True, slots=True)
class ListQuery:
    """Validated list filters (enum values as their text)."""

    status: str | None = None
    type: str | None = None
    tier: str | None = None
    memory: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


class JobRepository:
    async def insert(self, conn: Connection, job: JobInsert) -> Job | None:
        """The new job; None when a pending job already holds its dedupe key."""
        try:
            row = await conn.fetchrow(_INSERT, *job.args())
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {job.memory!r} does not exist", memory=job.memory) from exc
        return _job(row) if row else None

    async def insert_many(self, conn: Connection, jobs: Sequence[JobInsert]) -> list[Job]:
        """The jobs inserted, in order; a job whose dedupe key a pending job (or an earlier
        one of ``jobs``) holds is left out."""
        columns = list(zip(*(job.args() for job in jobs), strict=True))
        columns[5] = tuple(json.dumps(payload) for payload in columns[5])
        try:
            rows = await conn.fetch(_INSERT_MANY, *(list(column) for column in columns))
        except asyncpg.ForeignKeyViolationError as exc:
            named = sorted({job.memory for job in jobs if job.memory is not None})
            raise NotFound(
                f"Memory {named[0]!r} does not exist"
                if len(named) == 1
                else f"One of the memories {', '.join(named)} does not exist",
                memory=named[0] if len(named) == 1 else None,
            ) from exc
        return [_job(row) for row in rows]

    async def pending_by_keys(self, conn: Connection, keys: Sequence[str]) -> dict[str, Job]:
        rows = await conn.fetch(_PENDING_BY_KEYS, list(keys))
        return {row["dedupe_key"]: _job(row) for row in rows}

    async def pending_by_key(self, conn: Connection, dedupe_key: str) -> Job | None:
        row = await conn.fetchrow(_PENDING_BY_KEY, dedupe_key)
        return _job(row) if row else None

    async def get(self, conn: Connection, job_id: UUID) -> Job | None:
        row = await conn.fetchrow(_GET, job_id)
        return _job(row) if row else None

    async def claim(
        self, conn: Connection, tier: Tier, worker_id: str, lease_seconds: float
    ) -> Job | None:
        """The best runnable job of ``tier``, now running under ``worker_id``; or None."""
        row = await conn.fetchrow(_CLAIM, tier.value, worker_id, lease_seconds)
        return _job(row) if row else None

    async def heartbeat(
        self, conn: Connection, job_id: UUID, worker_id: str, lease_seconds: float
    ) -> bool:
        return bool(await conn.fetchval(_HEARTBEAT, job_id, worker_id, lease_seconds))

    async def progress(
        self,
        conn: Connection,
        job_id: UUID,
        worker_id: str,
        percent: int,
        message: str | None,
        lease_seconds: float,
    ) -> Job | None:
        """The job with its progress recorded; None if it no longer runs under ``worker_id``."""
        row = await conn.fetchrow(_PROGRESS, job_id, worker_id, percent, message, lease_seconds)
        return _job(row) if row else None

    async def lock_running(
        self, conn: Connection, job_id: UUID, worker_id: str
    ) -> tuple[int, int] | None:
        """(attempts, max_attempts) of the job, locked, if it runs under ``worker_id``."""
        row = await conn.fetchrow(_LOCK_RUNNING, job_id, worker_id)
        return None if row is None else (row["attempts"], row["max_attempts"])

    async def lock_expired(
        self, conn: Connection, limit: int
    ) -> builtins.list[tuple[UUID, int, int]]:
        """(id, attempts, max_attempts) of running jobs whose lease expired, locked."""
        rows = await conn.fetch(_LOCK_EXPIRED, limit)
        return [(row["id"], row["attempts"], row["max_attempts"]) for row in rows]

    async def complete(self, conn: Connection, job_id: UUID, result: dict[str, Any]) -> Job:
        return _job(_returned(await conn.fetchrow(_COMPLETE, job_id, result)))

    async def settle(
        self,
        conn: Connection,
        delays: Sequence[tuple[UUID, float | None]],
        failure_class: FailureClass,
        failure_code: str,
    ) -> builtins.list[Job]:
        """Requeue (a delay in seconds) or fail (None) each locked job, recording the error."""
        if not delays:
            return []
        ids = [job_id for job_id, _ in delays]
        seconds = [delay for _, delay in delays]
        rows = await conn.fetch(_SETTLE, ids, seconds, failure_class.value, failure_code)
        return [_job(row) for row in rows]

    async def release(self, conn: Connection, job_id: UUID, worker_id: str) -> Job | None:
        """The job, pending again with its attempt given back; None if not ours."""
        row = await conn.fetchrow(_RELEASE, job_id, worker_id)
        return _job(row) if row else None

    async def cancel(self, conn: Connection, job_id: UUID) -> Job | None:
        """The job, newly cancelled; None when it is absent or already finished."""
        row = await conn.fetchrow(_CANCEL, job_id)
        return _job(row) if row else None

    async def retry(self, conn: Connection, job_id: UUID) -> Job | None:
        """The job, pending again; None when it is absent or not failed/cancelled."""
        try:
            row = await conn.fetchrow(_RETRY, job_id)
        except asyncpg.UniqueViolationError as exc:
            raise Conflict(
                f"Job {job_id} cannot be retried: another pending job has its dedupe key",
                job_id=str(job_id),
            ) from exc
        return _job(row) if row else None

    async def due_for_send(
        self, conn: Connection, *, resend_after: float, grace: float, limit: int
    ) -> builtins.list[Job]:
        return [_job(row) for row in await conn.fetch(_DUE_FOR_SEND, resend_after, grace, limit)]

    async def mark_sent(self, conn: Connection, job_ids: Sequence[UUID]) -> None:
        await conn.execute(_MARK_SENT, list(job_ids))

    async def list(
        self,
        conn: Connection,
        query: ListQuery,
        *,
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> builtins.list[Job]:
        """Jobs newest first (id breaks ties), strictly after the ``after`` position."""
        where = Where()
        for column in ("status", "type", "tier", "memory"):
            value = getattr(query, column)
            if value is not None:
                # ``column`` comes from the fixed tuple above, never from the caller.
                where.add(f"{column} = {{0}}", value)
        if query.created_after is not None:
            where.add("created_at >= {0}::timestamptz", query.created_after)
        if query.created_before is not None:
            where.add("created_at < {0}::timestamptz", query.created_before)
        if after is not None:
            where.add("(created_at, id) < ({0}::timestamptz, {1}::uuid)", *after)
        sql = (
            f"SELECT {_COLUMNS} FROM public.job WHERE {where.sql()} "  # noqa: S608 - fixed fragments
            f"ORDER BY created_at DESC, id DESC LIMIT ${len(where.args) + 1}"
        )
        return [_job(row) for row in await conn.fetch(sql, *where.args, limit)]

    async def stats(self, conn: Connection) -> builtins.list[StatsRow]:
        return [
            StatsRow(JobStatus(row["status"]), Tier(row["tier"]), row["n"], row["oldest"])
            for row in await conn.fetch(_STATS)
        ]

    async def live(self, conn: Connection) -> builtins.list[LiveRow]:
        return [
            LiveRow(row["type"], Tier(row["tier"]), JobStatus(row["status"]), row["n"])
            for row in await conn.fetch(_LIVE)
        ]

    async def pause(self, conn: Connection, memory: str | None, actor: str | None) -> None:
        try:
            await conn.execute(_PAUSE, memory, actor)
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {memory!r} does not exist", memory=memory) from exc

    async def resume(self, conn: Connection, memory: str | None) -> None:
        await conn.execute(_RESUME, memory)

    async def pauses(self, conn: Connection) -> builtins.list[JobPause]:
        return [
            JobPause(row["memory"], row["paused_at"], row["paused_by"])
            for row in await conn.fetch(_PAUSES)
        ]

    async def count_live(self, conn: Connection, memory: str, type: str) -> int:
        """Jobs of ``type`` for ``memory`` still to run or running (in ``conn``'s
        transaction, so a memory's counts and its jobs are read in one snapshot)."""
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM public.job WHERE memory = $1 AND type = $2 "
                "AND status IN ('pending', 'running')",
                memory,
                type,
            )
        )


def _returned(row: asyncpg.Record | None) -> asyncpg.Record:
    """The row a write on a locked job returned; its absence is a bug, not bad input."""
    if row is None:
        raise RuntimeError("a job write returned no row; the job was locked and must exist")
    return row
