"""Listing jobs newest first with keyset cursors and filters; counting them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.jobs.models import Job, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import MAX_PAGE_SIZE, JobFilter, JobService
from tests.integration.jobs.helpers import (
    CPU,
    FAST,
    MEMORIES,
    STANDARD,
    WORKER,
    shift,
    spec,
)

ALPHA, BETA = MEMORIES


async def _submit(jobs: JobService, n: int, job_type: str = CPU, **fields: object) -> list[Job]:
    return [(await jobs.submit(spec(job_type, **fields)))[0] for _ in range(n)]


async def test_pages_follow_each_other_newest_first_without_gaps_or_overlap(
    jobs: JobService,
) -> None:
    created = await _submit(jobs, 5)
    seen: list[Job] = []
    after = None
    while True:
        page = await jobs.list(JobFilter(), first=2, after=after)
        seen.extend(job for _, job in page.items)
        if not page.has_next_page:
            break
        after = page.end_cursor
    assert [job.id for job in seen] == [job.id for job in reversed(created)]


async def test_first_zero_gives_an_empty_page_that_says_whether_more_follow(
    jobs: JobService,
) -> None:
    await _submit(jobs, 1)
    page = await jobs.list(JobFilter(), first=0, after=None)
    assert (page.items, page.has_next_page, page.end_cursor) == ([], True, None)


async def test_first_is_capped_at_the_maximum_page_size(
    jobs: JobService, jobs_db: Database
) -> None:
    async with jobs_db.connection() as conn:
        await conn.execute(
            "INSERT INTO public.job (id, type, tier, priority, max_attempts) "
            "SELECT gen_random_uuid(), $1, 'cpu', 5, 3 FROM generate_series(1, $2)",
            CPU,
            MAX_PAGE_SIZE + 5,
        )
    page = await jobs.list(JobFilter(), first=1000, after=None)
    assert len(page.items) == MAX_PAGE_SIZE
    assert page.has_next_page


@pytest.mark.parametrize(
    ("first", "after"),
    [
        (-1, None),
        (None, "not-a-cursor"),
        # A note cursor is well formed, but names a position in another list.
        (
            None,
            "WyJuMSIsIjIwMjQtMDEtMDFUMDA6MDA6MDArMDA6MDAiLCIwMDAwMDAwMC0wMDAwLTAwMDAtMDAwMC0wMDAwMDAwMDAwMDAiXQ",
        ),
    ],
    ids=["negative-first", "garbage-cursor", "note-cursor"],
)
async def test_a_bad_page_request_is_bad_user_input(
    jobs: JobService, first: int | None, after: str | None
) -> None:
    with pytest.raises(BadUserInput):
        await jobs.list(JobFilter(), first=first, after=after)


async def test_each_filter_narrows_the_list(jobs: JobService, jobs_db: Database) -> None:
    [alpha_cpu] = await _submit(jobs, 1, memory=ALPHA)
    [beta_fast] = await _submit(jobs, 1, FAST, memory=BETA)
    [standard] = await _submit(jobs, 1, STANDARD)
    assert await jobs.claim([Tier.FAST_GPU], WORKER) is not None
    await shift(jobs_db, standard.id, "created_at", -3600)

    async def ids(**fields: object) -> set[object]:
        page = await jobs.list(JobFilter(**fields), first=None, after=None)  # type: ignore[arg-type]
        return {job.id for _, job in page.items}

    assert await ids() == {alpha_cpu.id, beta_fast.id, standard.id}
    assert await ids(memory=ALPHA) == {alpha_cpu.id}
    assert await ids(type=FAST) == {beta_fast.id}
    assert await ids(tier=Tier.STANDARD_GPU) == {standard.id}
    assert await ids(status=JobStatus.RUNNING) == {beta_fast.id}
    assert await ids(status=JobStatus.PENDING, memory=BETA) == set()
    boundary = alpha_cpu.created_at - timedelta(minutes=1)
    assert await ids(created_before=boundary) == {standard.id}
    assert await ids(created_after=boundary) == {alpha_cpu.id, beta_fast.id}


@pytest.mark.parametrize("fields", [{"status": "lost"}, {"tier": "tpu"}, {"memory": "Not A Name"}])
async def test_an_invalid_filter_is_bad_user_input(
    jobs: JobService, fields: dict[str, object]
) -> None:
    with pytest.raises(BadUserInput):
        await jobs.list(JobFilter(**fields), first=None, after=None)  # type: ignore[arg-type]


async def test_stats_count_by_status_and_pending_by_tier(
    jobs: JobService, jobs_db: Database
) -> None:
    assert (await jobs.stats()).oldest_pending_at is None
    oldest, *_ = await _submit(jobs, 3)
    await _submit(jobs, 2, FAST)
    await shift(jobs_db, oldest.id, "created_at", -3600)
    running = await jobs.claim([Tier.FAST_GPU], WORKER)
    assert running is not None
    done = await jobs.claim([Tier.FAST_GPU], WORKER)
    assert done is not None
    await jobs.finish(done.id, WORKER, JobOutcome.success())
    stats = await jobs.stats()
    assert stats.by_status == {
        "pending": 3,
        "running": 1,
        "completed": 1,
        "failed": 0,
        "cancelled": 0,
    }
    assert stats.by_tier_pending == {"cpu": 3, "fast_gpu": 0, "standard_gpu": 0}
    stored = await jobs.get(oldest.id)
    assert stored is not None
    assert stats.oldest_pending_at == stored.created_at
