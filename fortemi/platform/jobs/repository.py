"""All SQL for jobs and pauses (``public.job``, ``public.job_pause``).

Table names are schema-qualified because :meth:`JobRepository.insert` runs in the caller's
transaction, which may be a memory transaction whose search path starts elsewhere. Values
always travel as parameters, bound by name (:mod:`fortemi.platform.sql`); a job's columns
are the fields of :class:`Job`, a new job's those of :class:`JobInsert`. Only the list
query splices text at run time, from fixed filter fragments (``noqa: S608`` there).

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
from fortemi.platform.sql import Query, Table, Where

__all__ = ["JOB", "JobInsert", "JobPause", "JobRepository", "ListQuery", "LiveRow", "StatsRow"]


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


@dataclass(frozen=True, slots=True)
class ListQuery:
    """Validated list filters (enum values as their text)."""

    status: str | None = None
    type: str | None = None
    tier: str | None = None
    memory: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


# Declared once: a job's columns are Job's fields, a new job's are JobInsert's; the
# aggregate rows are mapped by their field names too.
JOB = Table("public.job", Job)
_NEW_JOB = Table("public.job", JobInsert)
_PAUSE_ROW = Table("public.job_pause", JobPause)
_STATS_ROW = Table("public.job", StatsRow)
_LIVE_ROW = Table("public.job", LiveRow)


# The new row takes no lock on an existing one: ON CONFLICT names the partial unique index
# (one pending job per dedupe key), and a concurrent inserter of the same key makes this
# statement wait for its transaction and then do nothing. clock_timestamp() keeps jobs
# enqueued in one transaction in order.
_INSERT = JOB.query("""
INSERT INTO public.job (id, memory, type, tier, priority, payload, max_attempts, dedupe_key,
                        requested_by, next_attempt_at, created_at, updated_at)
SELECT :id::uuid, :memory::text, :type::text, :tier::text, :priority::smallint,
       :payload::jsonb, :max_attempts::integer, :dedupe_key::text, :requested_by::text,
       t.at, t.at, t.at
FROM (SELECT clock_timestamp() AS at) AS t
ON CONFLICT (dedupe_key) WHERE status = 'pending' AND dedupe_key IS NOT NULL DO NOTHING
RETURNING {columns}
""")

_PENDING_BY_KEY = JOB.query(
    "SELECT {columns} FROM public.job WHERE dedupe_key = :key AND status = 'pending'"
)

# _INSERT for many jobs in one statement, in the order given (one clock reading for all).
# A key held by a pending job, or by an earlier row of the same batch, is skipped.
# Each bind is the array of that column's values (payloads as JSON text).
_INSERT_MANY = JOB.query("""
INSERT INTO public.job (id, memory, type, tier, priority, payload, max_attempts, dedupe_key,
                        requested_by, next_attempt_at, created_at, updated_at)
SELECT j.id, j.memory, j.type, j.tier, j.priority, j.payload::jsonb, j.max_attempts,
       j.dedupe_key, j.requested_by, t.at, t.at, t.at
FROM unnest(:id::uuid[], :memory::text[], :type::text[], :tier::text[], :priority::smallint[],
            :payload::text[], :max_attempts::integer[], :dedupe_key::text[],
            :requested_by::text[])
     WITH ORDINALITY AS j(id, memory, type, tier, priority, payload, max_attempts, dedupe_key,
                          requested_by, n),
     (SELECT clock_timestamp() AS at) AS t
ORDER BY j.n
ON CONFLICT (dedupe_key) WHERE status = 'pending' AND dedupe_key IS NOT NULL DO NOTHING
RETURNING {columns}
""")

_PENDING_BY_KEYS = JOB.query(
    "SELECT {columns} FROM public.job WHERE dedupe_key = ANY(:keys::text[]) AND status = 'pending'"
)

_GET = JOB.query("SELECT {columns} FROM public.job WHERE id = :id")

# SKIP LOCKED: concurrent claimers each take a different row instead of queueing on the
# best one. The ORDER BY matches the job_claim index for one tier, which is why the caller
# asks tier by tier. A new attempt starts its progress from zero.
_CLAIM = JOB.query("""
WITH candidate AS (
    SELECT c.id FROM public.job AS c
    WHERE c.status = 'pending' AND c.tier = :tier AND c.next_attempt_at <= now()
      AND NOT EXISTS (
          SELECT 1 FROM public.job_pause AS p WHERE p.memory IS NULL OR p.memory = c.memory)
    ORDER BY c.priority DESC, c.next_attempt_at, c.created_at
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED
)
UPDATE public.job AS j
SET status = 'running', attempts = j.attempts + 1, lease_owner = :worker,
    lease_expires_at = now() + make_interval(secs => :lease_seconds), progress = 0,
    progress_message = NULL, started_at = coalesce(j.started_at, now()), updated_at = now()
FROM candidate
WHERE j.id = candidate.id
RETURNING {j.columns}
""")

_HEARTBEAT = Query("""
UPDATE public.job SET lease_expires_at = now() + make_interval(secs => :lease_seconds)
WHERE id = :id AND status = 'running' AND lease_owner = :worker
RETURNING true
""")

_PROGRESS = JOB.query("""
UPDATE public.job
SET progress = :percent, progress_message = :message,
    lease_expires_at = now() + make_interval(secs => :lease_seconds), updated_at = now()
WHERE id = :id AND status = 'running' AND lease_owner = :worker
RETURNING {columns}
""")

_LOCK_RUNNING = Query("""
SELECT id, attempts, max_attempts FROM public.job
WHERE id = :id AND status = 'running' AND lease_owner = :worker
FOR UPDATE
""")

# SKIP LOCKED: a row a worker is finishing right now is that worker's to settle.
_LOCK_EXPIRED = Query("""
SELECT id, attempts, max_attempts FROM public.job
WHERE status = 'running' AND lease_expires_at < now()
ORDER BY lease_expires_at
LIMIT :limit
FOR UPDATE SKIP LOCKED
""")

_COMPLETE = JOB.query("""
UPDATE public.job
SET status = 'completed', progress = 100, result = :result::jsonb, failure_class = NULL,
    failure_code = NULL, lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
    updated_at = now()
WHERE id = :id
RETURNING {columns}
""")

# Per row: a NULL delay fails the job for good, a number puts it back in the queue that many
# seconds from now with a new message due (enqueued_at NULL).
_SETTLE = JOB.query("""
UPDATE public.job AS j
SET status = CASE WHEN d.delay IS NULL THEN 'failed' ELSE 'pending' END,
    next_attempt_at = CASE WHEN d.delay IS NULL THEN j.next_attempt_at
                           ELSE now() + make_interval(secs => d.delay) END,
    finished_at = CASE WHEN d.delay IS NULL THEN now() END,
    failure_class = :failure_class, failure_code = :failure_code, lease_owner = NULL,
    lease_expires_at = NULL, enqueued_at = NULL, updated_at = now()
FROM unnest(:ids::uuid[], :delays::float8[]) AS d(id, delay)
WHERE j.id = d.id
RETURNING {j.columns}
""")

# A shutdown hands a job back uncounted: the attempt was stopped by its worker, and a job
# with one attempt left must not fail for a deploy. The code says why it ran again.
_RELEASE = JOB.query("""
UPDATE public.job
SET status = 'pending', attempts = greatest(attempts - 1, 0), next_attempt_at = now(),
    failure_class = 'stale_worker', failure_code = 'worker_shutdown', lease_owner = NULL,
    lease_expires_at = NULL, enqueued_at = NULL, updated_at = now()
WHERE id = :id AND status = 'running' AND lease_owner = :worker
RETURNING {columns}
""")

_CANCEL = JOB.query("""
UPDATE public.job
SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
    updated_at = now()
WHERE id = :id AND status IN ('pending', 'running')
RETURNING {columns}
""")

# The failure fields stay: they say why the operator had to retry until the next run ends.
_RETRY = JOB.query("""
UPDATE public.job
SET status = 'pending', attempts = 0, next_attempt_at = now(), finished_at = NULL,
    enqueued_at = NULL, updated_at = now()
WHERE id = :id AND status IN ('failed', 'cancelled')
RETURNING {columns}
""")

# An unsent row (enqueued_at NULL) gets a grace period: its after-commit send may be in
# flight, and sending twice would only cost a wasted wake-up, but every time.
_DUE_FOR_SEND = JOB.query("""
SELECT {columns} FROM public.job
WHERE status = 'pending' AND next_attempt_at <= now()
  AND ((enqueued_at IS NULL AND updated_at < now() - make_interval(secs => :grace))
       OR enqueued_at < now() - make_interval(secs => :resend_after))
ORDER BY priority DESC, next_attempt_at, created_at
LIMIT :limit
""")

_MARK_SENT = Query("""
UPDATE public.job SET enqueued_at = now() WHERE id = ANY(:ids::uuid[]) AND status = 'pending'
""")

_STATS = Query("""
SELECT status, tier, count(*) AS count, min(created_at) AS oldest_created_at
FROM public.job GROUP BY status, tier
""")

# Only live jobs: the partial indexes on pending and running jobs keep this cheap however
# long the history of finished jobs grows.
_LIVE = Query("""
SELECT type, tier, status, count(*) AS count FROM public.job
WHERE status IN ('pending', 'running') GROUP BY type, tier, status
""")

_PAUSE = Query("""
INSERT INTO public.job_pause (memory, paused_by) VALUES (:memory, :actor)
ON CONFLICT ((coalesce(memory, ''))) DO NOTHING
""")

# Workers consumed the wake-ups of jobs held back by the pause and found nothing to claim;
# marking those jobs unsent lets the relay wake them now instead of after resend_after.
# Resuming everything leaves alone the jobs of memories still paused on their own.
_RESUME = Query("""
WITH resumed AS (
    DELETE FROM public.job_pause WHERE coalesce(memory, '') = coalesce(:memory, '') RETURNING memory
)
UPDATE public.job AS j SET enqueued_at = NULL
FROM resumed
WHERE j.status = 'pending' AND j.enqueued_at IS NOT NULL
  AND (j.memory = resumed.memory
       OR (resumed.memory IS NULL
           AND NOT EXISTS (SELECT 1 FROM public.job_pause AS p WHERE p.memory = j.memory)))
""")

_PAUSES = _PAUSE_ROW.query("SELECT {columns} FROM public.job_pause ORDER BY memory NULLS FIRST")


class JobRepository:
    async def insert(self, conn: Connection, job: JobInsert) -> Job | None:
        """The new job; None when a pending job already holds its dedupe key."""
        try:
            row = await conn.fetchrow(_INSERT.sql, *_INSERT.args(_NEW_JOB.binds(job)))
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {job.memory!r} does not exist", memory=job.memory) from exc
        return JOB.from_record(row) if row else None

    async def insert_many(self, conn: Connection, jobs: Sequence[JobInsert]) -> list[Job]:
        """The jobs inserted, in order; a job whose dedupe key a pending job (or an earlier
        one of ``jobs``) holds is left out."""
        binds = [_NEW_JOB.binds(job) for job in jobs]
        arrays = {name: [b[name] for b in binds] for name in _NEW_JOB.columns}
        arrays["payload"] = [json.dumps(payload) for payload in arrays["payload"]]
        try:
            rows = await conn.fetch(_INSERT_MANY.sql, *_INSERT_MANY.args(arrays))
        except asyncpg.ForeignKeyViolationError as exc:
            named = sorted({job.memory for job in jobs if job.memory is not None})
            raise NotFound(
                f"Memory {named[0]!r} does not exist"
                if len(named) == 1
                else f"One of the memories {', '.join(named)} does not exist",
                memory=named[0] if len(named) == 1 else None,
            ) from exc
        return JOB.from_records(rows)

    async def pending_by_keys(self, conn: Connection, keys: Sequence[str]) -> dict[str, Job]:
        rows = await conn.fetch(_PENDING_BY_KEYS.sql, *_PENDING_BY_KEYS.args(keys=list(keys)))
        return {row["dedupe_key"]: JOB.from_record(row) for row in rows}

    async def pending_by_key(self, conn: Connection, dedupe_key: str) -> Job | None:
        row = await conn.fetchrow(_PENDING_BY_KEY.sql, *_PENDING_BY_KEY.args(key=dedupe_key))
        return JOB.from_record(row) if row else None

    async def get(self, conn: Connection, job_id: UUID) -> Job | None:
        row = await conn.fetchrow(_GET.sql, *_GET.args(id=job_id))
        return JOB.from_record(row) if row else None

    async def claim(
        self, conn: Connection, tier: Tier, worker_id: str, lease_seconds: float
    ) -> Job | None:
        """The best runnable job of ``tier``, now running under ``worker_id``; or None."""
        args = _CLAIM.args(tier=tier.value, worker=worker_id, lease_seconds=lease_seconds)
        row = await conn.fetchrow(_CLAIM.sql, *args)
        return JOB.from_record(row) if row else None

    async def heartbeat(
        self, conn: Connection, job_id: UUID, worker_id: str, lease_seconds: float
    ) -> bool:
        args = _HEARTBEAT.args(id=job_id, worker=worker_id, lease_seconds=lease_seconds)
        return bool(await conn.fetchval(_HEARTBEAT.sql, *args))

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
        args = _PROGRESS.args(
            id=job_id,
            worker=worker_id,
            percent=percent,
            message=message,
            lease_seconds=lease_seconds,
        )
        row = await conn.fetchrow(_PROGRESS.sql, *args)
        return JOB.from_record(row) if row else None

    async def lock_running(
        self, conn: Connection, job_id: UUID, worker_id: str
    ) -> tuple[int, int] | None:
        """(attempts, max_attempts) of the job, locked, if it runs under ``worker_id``."""
        row = await conn.fetchrow(
            _LOCK_RUNNING.sql, *_LOCK_RUNNING.args(id=job_id, worker=worker_id)
        )
        return None if row is None else (row["attempts"], row["max_attempts"])

    async def lock_expired(
        self, conn: Connection, limit: int
    ) -> builtins.list[tuple[UUID, int, int]]:
        """(id, attempts, max_attempts) of running jobs whose lease expired, locked."""
        rows = await conn.fetch(_LOCK_EXPIRED.sql, *_LOCK_EXPIRED.args(limit=limit))
        return [(row["id"], row["attempts"], row["max_attempts"]) for row in rows]

    async def complete(self, conn: Connection, job_id: UUID, result: dict[str, Any]) -> Job:
        args = _COMPLETE.args(id=job_id, result=result)
        return _returned(await conn.fetchrow(_COMPLETE.sql, *args))

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
        args = _SETTLE.args(
            ids=[job_id for job_id, _ in delays],
            delays=[delay for _, delay in delays],
            failure_class=failure_class.value,
            failure_code=failure_code,
        )
        return JOB.from_records(await conn.fetch(_SETTLE.sql, *args))

    async def release(self, conn: Connection, job_id: UUID, worker_id: str) -> Job | None:
        """The job, pending again with its attempt given back; None if not ours."""
        row = await conn.fetchrow(_RELEASE.sql, *_RELEASE.args(id=job_id, worker=worker_id))
        return JOB.from_record(row) if row else None

    async def cancel(self, conn: Connection, job_id: UUID) -> Job | None:
        """The job, newly cancelled; None when it is absent or already finished."""
        row = await conn.fetchrow(_CANCEL.sql, *_CANCEL.args(id=job_id))
        return JOB.from_record(row) if row else None

    async def retry(self, conn: Connection, job_id: UUID) -> Job | None:
        """The job, pending again; None when it is absent or not failed/cancelled."""
        try:
            row = await conn.fetchrow(_RETRY.sql, *_RETRY.args(id=job_id))
        except asyncpg.UniqueViolationError as exc:
            raise Conflict(
                f"Job {job_id} cannot be retried: another pending job has its dedupe key",
                job_id=str(job_id),
            ) from exc
        return JOB.from_record(row) if row else None

    async def due_for_send(
        self, conn: Connection, *, resend_after: float, grace: float, limit: int
    ) -> builtins.list[Job]:
        args = _DUE_FOR_SEND.args(resend_after=resend_after, grace=grace, limit=limit)
        return JOB.from_records(await conn.fetch(_DUE_FOR_SEND.sql, *args))

    async def mark_sent(self, conn: Connection, job_ids: Sequence[UUID]) -> None:
        await conn.execute(_MARK_SENT.sql, *_MARK_SENT.args(ids=list(job_ids)))

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
            f"SELECT {JOB.select_list} FROM public.job WHERE {where.sql()} "  # noqa: S608 - fixed fragments
            f"ORDER BY created_at DESC, id DESC LIMIT ${len(where.args) + 1}"
        )
        return JOB.from_records(await conn.fetch(sql, *where.args, limit))

    async def stats(self, conn: Connection) -> builtins.list[StatsRow]:
        return _STATS_ROW.from_records(await conn.fetch(_STATS.sql))

    async def live(self, conn: Connection) -> builtins.list[LiveRow]:
        return _LIVE_ROW.from_records(await conn.fetch(_LIVE.sql))

    async def pause(self, conn: Connection, memory: str | None, actor: str | None) -> None:
        try:
            await conn.execute(_PAUSE.sql, *_PAUSE.args(memory=memory, actor=actor))
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {memory!r} does not exist", memory=memory) from exc

    async def resume(self, conn: Connection, memory: str | None) -> None:
        await conn.execute(_RESUME.sql, *_RESUME.args(memory=memory))

    async def pauses(self, conn: Connection) -> builtins.list[JobPause]:
        return _PAUSE_ROW.from_records(await conn.fetch(_PAUSES.sql))

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


def _returned(row: asyncpg.Record | None) -> Job:
    """The job a write on a locked job returned; its absence is a bug, not bad input."""
    if row is None:
        raise RuntimeError("a job write returned no row; the job was locked and must exist")
    return JOB.from_record(row)
