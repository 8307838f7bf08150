"""Test-only job types, their side tables, and the registry workers in these tests run.

Imported by the test process and by the worker subprocess (``worker_main``), so both run
the same handlers. Every handler records each run in ``worker_test.execution``; handlers
with an effect write it to ``worker_test.effect`` keyed by job id (at most one row per job,
whatever the number of runs), so "exactly once in effect" is a row count. Blocking
handlers wait for a row in ``worker_test.release``.

Each test uses job types of its own, so no test can mistake another's job for its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from uuid import UUID

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Handler, HandlerContext, JobOutcome, JobSpec, JobType, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.notes import NoteService
from fortemi.platform.notes.jobs import purge_note_type

DDL = """
CREATE SCHEMA IF NOT EXISTS worker_test;
CREATE TABLE IF NOT EXISTS worker_test.execution (
    job_id uuid NOT NULL,
    attempt integer NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS worker_test.effect (job_id uuid PRIMARY KEY);
CREATE TABLE IF NOT EXISTS worker_test.release (job_id uuid PRIMARY KEY);
"""

MAX_NOTE_BYTES = 4096


class PoisonError(Exception):
    """What the poison handler raises, every time."""


async def record_execution(db: Database, context: HandlerContext) -> None:
    async with db.connection() as conn:
        await conn.execute(
            "INSERT INTO worker_test.execution (job_id, attempt) VALUES ($1, $2)",
            context.job.id,
            context.job.attempts,
        )


async def record_effect(db: Database, job_id: UUID) -> None:
    async with db.connection() as conn:
        await conn.execute(
            "INSERT INTO worker_test.effect (job_id) VALUES ($1) ON CONFLICT DO NOTHING", job_id
        )


async def wait_for_release(db: Database, job_id: UUID) -> None:
    # Unbounded on purpose: a blocked handler ends by release, shutdown or a lost lease. The
    # release comes from another process through the database: no Event to wait on.
    query = "SELECT 1 FROM worker_test.release WHERE job_id = $1"
    while not await db.fetchval(query, job_id):  # noqa: ASYNC110 - see above
        await asyncio.sleep(0.05)


def _counting(db: Database) -> Handler:
    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        await record_effect(db, context.job.id)
        return JobOutcome.success({"ran": str(context.job.id)})

    return handle


def _blocking(db: Database, *, effect_first: bool) -> Handler:
    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        if effect_first:
            await record_effect(db, context.job.id)
        await wait_for_release(db, context.job.id)
        await record_effect(db, context.job.id)
        return JobOutcome.success({"released": True})

    return handle


def _held_in_transaction(db: Database) -> Handler:
    # Waits for its release inside the transaction that writes its effect: a server stopped
    # meanwhile kills the run mid-transaction, and its effect rolls back with it. The result
    # names the process that finished the job.
    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        query = "SELECT 1 FROM worker_test.release WHERE job_id = $1"
        async with db.shared_transaction() as conn:
            while not await conn.fetchval(query, context.job.id):  # noqa: ASYNC110 - as above
                await asyncio.sleep(0.05)
            await conn.execute(
                "INSERT INTO worker_test.effect (job_id) VALUES ($1) ON CONFLICT DO NOTHING",
                context.job.id,
            )
        return JobOutcome.success({"pid": os.getpid()})

    return handle


def _echo(db: Database) -> Handler:
    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        await context.report_progress(50, "halfway")
        await wait_for_release(db, context.job.id)
        return JobOutcome.success({"echo": context.job.payload.get("value")})

    return handle


def _poison(db: Database) -> Handler:
    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        raise PoisonError("this job always fails")

    return handle


def _spawn(db: Database) -> Handler:
    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        child = await context.enqueue(
            JobSpec(type=SPAWN_CHILD, payload={"parent": str(context.job.id)})
        )
        return JobOutcome.success({"child": str(child.id)})

    return handle


def _escalating(db: Database) -> Handler:
    """Too little from the cpu tier: hand the job one tier up, where it completes."""

    async def handle(context: HandlerContext) -> JobOutcome:
        await record_execution(db, context)
        if context.job.tier is Tier.CPU:
            return JobOutcome.escalated(await context.escalate("too_little_on_cpu"))
        return JobOutcome.success({"tier": context.job.tier.value})

    return handle


# name -> (tier, priority, max attempts, handler factory)
ECHO = "test.exec.echo"
UNKNOWN = "test.exec.unknown"
SPAWN, SPAWN_CHILD = "test.exec.spawn", "test.exec.spawn_child"
ESCALATING = "test.exec.escalating"
SEQUENTIAL = "test.exec.sequential"
PRIORITY = "test.sched.priority"
FAST, STANDARD = "test.sched.fast", "test.sched.standard"
POISON, HEALTHY = "test.fail.poison", "test.fail.healthy"
KILLED = "test.kill.block"
FLUSHED = "test.flush.count"
DUP_DONE, DUP_OTHER, DUP_RUNNING, DUP_BEHIND = (
    "test.dup.done",
    "test.dup.other",
    "test.dup.running",
    "test.dup.behind",
)
SHUTDOWN = "test.stop.block"
LEASE_LOST = "test.lease.block"
RELAYED, REAPED = "test.loop.relay", "test.loop.reap"
# Attempts to spare: an outage may cost a run a retry of its own and a lost lease.
PG_RESTART = "test.pgrestart.held"

_TYPES: dict[str, tuple[Tier, int, int, Callable[[Database], Handler]]] = {
    ECHO: (Tier.CPU, 5, 3, _echo),
    UNKNOWN: (Tier.CPU, 5, 3, _counting),
    SPAWN: (Tier.CPU, 5, 3, _spawn),
    SPAWN_CHILD: (Tier.CPU, 5, 3, _counting),
    ESCALATING: (Tier.CPU, 5, 3, _escalating),
    SEQUENTIAL: (Tier.CPU, 5, 3, _counting),
    PRIORITY: (Tier.CPU, 2, 3, _counting),
    FAST: (Tier.FAST_GPU, 5, 3, _counting),
    STANDARD: (Tier.STANDARD_GPU, 5, 3, _counting),
    POISON: (Tier.CPU, 5, 3, _poison),
    HEALTHY: (Tier.CPU, 5, 3, _counting),
    KILLED: (Tier.CPU, 5, 3, lambda db: _blocking(db, effect_first=True)),
    FLUSHED: (Tier.CPU, 5, 3, _counting),
    DUP_DONE: (Tier.CPU, 5, 3, _counting),
    DUP_OTHER: (Tier.CPU, 5, 3, _counting),
    DUP_RUNNING: (Tier.CPU, 5, 3, lambda db: _blocking(db, effect_first=False)),
    DUP_BEHIND: (Tier.CPU, 5, 3, _counting),
    SHUTDOWN: (Tier.CPU, 5, 3, lambda db: _blocking(db, effect_first=False)),
    LEASE_LOST: (Tier.CPU, 5, 3, lambda db: _blocking(db, effect_first=False)),
    RELAYED: (Tier.CPU, 5, 3, _counting),
    REAPED: (Tier.CPU, 5, 3, _counting),
    PG_RESTART: (Tier.CPU, 5, 10, _held_in_transaction),
}


def build_registry(db: Database, *, without: Iterable[str] = ()) -> JobRegistry:
    """The built-in types (PurgeNote) plus every test type, minus ``without``."""
    registry = JobRegistry()
    registry.register(
        purge_note_type(
            NoteService(db, max_note_bytes=MAX_NOTE_BYTES, max_page_size=50, max_upsert_batch=10)
        )
    )
    skip = set(without)
    for name, (tier, priority, attempts, factory) in _TYPES.items():
        if name not in skip:
            registry.register(JobType(name, tier, priority, factory(db), max_attempts=attempts))
    return registry
