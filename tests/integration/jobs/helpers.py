"""Job types, memories and SQL shortcuts shared by the job service tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobSpec, JobType, Tier
from fortemi.platform.jobs.registry import JobRegistry

LEASE_SECONDS = 60.0
MEMORIES = ("jobs_alpha", "jobs_beta")
CPU, FAST, STANDARD = "test.cpu", "test.fast", "test.standard"
WORKER = "worker-1"


async def _never_run(context: HandlerContext) -> JobOutcome:  # pragma: no cover
    raise AssertionError("the service never runs handlers")


def make_registry() -> JobRegistry:
    registry = JobRegistry()
    for name, tier in ((CPU, Tier.CPU), (FAST, Tier.FAST_GPU), (STANDARD, Tier.STANDARD_GPU)):
        registry.register(JobType(name, tier, priority=5, handler=_never_run, max_attempts=3))
    return registry


def spec(job_type: str = CPU, **fields: Any) -> JobSpec:
    return JobSpec(type=job_type, **fields)


async def row(db: Database, job_id: UUID) -> dict[str, Any]:
    """Every column of the job, including those ``Job`` does not carry."""
    async with db.connection() as conn:
        record = await conn.fetchrow("SELECT * FROM public.job WHERE id = $1", job_id)
    assert record is not None
    return dict(record)


async def interval(db: Database, job_id: UUID, later: str, earlier: str) -> timedelta:
    """``later - earlier`` for two timestamp columns of the job, exactly as stored."""
    # The column names come from the tests themselves, never from input.
    query = f"SELECT {later} - {earlier} FROM public.job WHERE id = $1"  # noqa: S608
    value = await db.fetchval(query, job_id)
    assert isinstance(value, timedelta)
    return value


async def shift(db: Database, job_id: UUID, column: str, seconds: float) -> None:
    """Move a timestamp column of the job ``seconds`` from now (negative: into the past)."""
    query = f"UPDATE public.job SET {column} = now() + make_interval(secs => $2) WHERE id = $1"  # noqa: S608
    await db.fetchval(query, job_id, float(seconds))


async def count(db: Database, where: str = "true", *args: Any) -> int:
    value = await db.fetchval(f"SELECT count(*) FROM public.job WHERE {where}", *args)  # noqa: S608
    assert isinstance(value, int)
    return value
