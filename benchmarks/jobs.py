"""Job throughput and pickup latency through the real worker runtime.

``python -m benchmarks.jobs [--jobs N] [--threads 1,4,16] [--latency-jobs M]
[--idle-jobs K] [--idle-gap S] [--home DIR]``

Everything is the production path: jobs are rows written by :class:`JobService`, woken
by Dramatiq messages through Redis (:class:`JobDispatcher`), claimed, run and finished by
a :class:`WorkerPool` in this process (its own event loop thread and asyncpg pool, as in
``fortemi serve``), every change announced on the event bus (job.created, job.started,
job.completed). The handler does nothing, so the figures are the runtime's own cost.

* **drain**: N jobs are enqueued in one transaction and dispatched (one message each),
  then a pool with T threads is started and drains them. "jobs/s" is N over the span from
  the first claim to the last finish, both PostgreSQL timestamps; "wall" is from the
  pool's start to the last job seen completed (includes start-up and polling).
* **pickup**: one job at a time into a running 1-thread pool; each job is submitted,
  dispatched, and waited for before the next. "pickup" is ``started_at - created_at``
  (commit, mark, send, Redis, consumer poll, claim), "run" is ``finished_at -
  started_at`` (handler, heartbeat set-up, finish), both PostgreSQL times. Back to back
  (M jobs, gap 0) the consumer is always polling; after ``--idle-gap`` seconds of silence
  (K jobs) an idle Dramatiq consumer has backed off to polling Redis every
  ``idle_poll_ms``, which then dominates pickup. So idle pickup is shown at two settings.

The benchmark works in a database of its own (``bench_jobs_*``, created and dropped on
the server), so claims can never take jobs of a real installation.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID

import dramatiq
import redis.asyncio as redis

from benchmarks._common import (
    Latency,
    backing_services,
    bench_home,
    common_setup,
    ms,
    print_setup,
    table,
)
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import EventBus
from fortemi.platform.jobs.events import JobEventPublisher
from fortemi.platform.jobs.models import HandlerContext, Job, JobOutcome, JobSpec, JobType, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.migrations import Migrations
from fortemi.workers.broker import build_broker
from fortemi.workers.dispatch import JobDispatcher, dispatch
from fortemi.workers.pool import WorkerPool
from fortemi.workers.runtime import WorkerConfig

NOOP = "bench.noop"
POLL = 0.005


async def _noop(context: HandlerContext) -> JobOutcome:
    return JobOutcome.success()


def _registry(db: Database | None = None) -> JobRegistry:
    registry = JobRegistry()
    registry.register(JobType(NOOP, Tier.CPU, priority=5, handler=_noop, max_attempts=3))
    return registry


@asynccontextmanager
async def _private_database(urls: ServiceUrls) -> AsyncIterator[str]:
    name = f"bench_jobs_{uuid.uuid4().hex[:10]}"
    admin = await Database.connect(urls.database, min_size=1, max_size=1)
    try:
        async with admin.connection() as conn:
            await conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit(urlsplit(urls.database)._replace(path=f"/{name}"))
        finally:
            async with admin.connection() as conn:
                await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def _completed(db: Database, ids: Sequence[UUID], *, polls: int) -> None:
    for _ in range(polls):
        done = await db.fetchval(
            "SELECT count(*) FROM public.job WHERE id = ANY($1) AND status = 'completed'", ids
        )
        if done == len(ids):
            return
        await asyncio.sleep(POLL)
    raise RuntimeError(f"jobs did not complete within {polls} polls")


async def _span(db: Database, ids: Sequence[UUID]) -> timedelta:
    span: timedelta = await db.fetchval(
        "SELECT max(finished_at) - min(started_at) FROM public.job WHERE id = ANY($1)", ids
    )
    return span


async def _drain(
    db: Database, service: JobService, dispatcher: JobDispatcher, pool: WorkerPool, n: int,
    threads: int,
) -> list[str]:  # fmt: skip
    async with db.shared_transaction() as conn:
        jobs: list[Job] = [(await service.enqueue(conn, JobSpec(type=NOOP)))[0] for _ in range(n)]
    await service.announce_created(jobs)
    await dispatch(service, dispatcher, jobs)
    ids = [job.id for job in jobs]
    started = time.perf_counter()
    await asyncio.to_thread(pool.start, [Tier.CPU], threads)
    try:
        await _completed(db, ids, polls=int(600 / POLL))
        wall = time.perf_counter() - started
    finally:
        await asyncio.to_thread(pool.stop)
    span = (await _span(db, ids)).total_seconds()
    return [str(threads), str(n), f"{n / span:,.0f}", f"{span:.2f}", f"{wall:.2f}"]


def _raw_drain(redis_url: str, n: int, threads: int) -> float:
    """Raw Dramatiq, the baseline: the same broker set-up, a no-op actor, no job rows.

    n messages are queued, then a Worker with ``threads`` threads drains them; returns
    the wall seconds from the worker's start to the last message processed.
    """
    broker = build_broker(redis_url, namespace=f"bench-raw-{uuid.uuid4().hex[:8]}")
    done = threading.Event()
    lock = threading.Lock()
    count = 0

    def noop() -> None:
        nonlocal count
        with lock:
            count += 1
            if count == n:
                done.set()

    actor = dramatiq.actor(broker=broker, queue_name="raw", max_retries=0)(noop)
    for _ in range(n):
        actor.send()
    worker = dramatiq.Worker(broker, queues={"raw"}, worker_threads=threads, worker_timeout=100)
    started = time.perf_counter()
    worker.start()
    try:
        if not done.wait(timeout=600):
            raise RuntimeError(f"raw Dramatiq drained only {count} of {n} messages")
        return time.perf_counter() - started
    finally:
        worker.stop()
        broker.flush_all()
        broker.close()


async def _pickup(
    db: Database, service: JobService, dispatcher: JobDispatcher, pool: WorkerPool, m: int,
    gap: float,
) -> tuple[Latency, Latency]:  # fmt: skip
    await asyncio.to_thread(pool.start, [Tier.CPU], 1)
    pickups: list[float] = []
    runs: list[float] = []
    try:
        for _ in range(m):
            await asyncio.sleep(gap)
            job, _ = await service.submit(JobSpec(type=NOOP))
            await dispatch(service, dispatcher, [job])
            await _completed(db, [job.id], polls=int(60 / POLL))
            done = await service.get(job.id)
            assert done is not None
            assert done.started_at
            assert done.finished_at
            pickups.append((done.started_at - done.created_at).total_seconds())
            runs.append((done.finished_at - done.started_at).total_seconds())
    finally:
        await asyncio.to_thread(pool.stop)
    return Latency.of(pickups), Latency.of(runs)


async def _run(args: argparse.Namespace) -> None:
    threads = [int(t) for t in args.threads.split(",")]
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        async with _private_database(urls) as dsn:
            db = await Database.connect(dsn, min_size=1, max_size=4)
            try:
                await Migrations().migrate_shared(db)
                await _measure(args, threads, urls, dsn, db, embedded, home)
            finally:
                await db.close()


async def _measure(
    args: argparse.Namespace, threads: list[int], urls: ServiceUrls, dsn: str, db: Database,
    embedded: bool, home: Path,
) -> None:  # fmt: skip
    broker = build_broker(urls.redis, namespace=f"bench-{uuid.uuid4().hex[:8]}")
    dispatcher = JobDispatcher(broker)
    # Events on, as in production: every job is announced created, started and completed.
    events = redis.Redis.from_url(urls.redis)
    service = JobService(db, _registry(), events=JobEventPublisher(EventBus(events)))
    config = WorkerConfig(database_url=dsn, registry=_registry, redis_url=urls.redis)
    setup = await common_setup(urls, embedded, home)
    setup += [
        ("runtime", "WorkerPool in this process: 1 event loop thread, asyncpg pool 2T+2"),
        ("broker", "dramatiq RedisBroker (Retries max_retries=0 only)"),
        ("handler", "no-op; lease 60 s (heartbeat every 20 s: never fires here)"),
        ("events", "job.created/started/completed published on the event bus, as in production"),
        (
            "workload",
            f"drain {args.jobs} jobs at T={threads}; pickup {args.latency_jobs} jobs back to "
            f"back, {args.idle_jobs} after {args.idle_gap} s idle each",
        ),
    ]
    print_setup("jobs: drain throughput and pickup latency", setup)
    try:
        rows = []
        for count in threads:
            pool = WorkerPool(broker, replace(config, idle_poll_ms=100))
            row = await _drain(db, service, dispatcher, pool, args.jobs, count)
            raw_wall = await asyncio.to_thread(_raw_drain, urls.redis, args.jobs, count)
            ours = args.jobs / float(row[4])
            raw = args.jobs / raw_wall
            rows.append([*row, f"{raw:,.0f}", f"{ours / raw:.2f}x"])
        print("## drain (backlog of no-op jobs, idle_poll_ms=100), next to raw Dramatiq")
        headers = ["threads", "jobs", "jobs/s", "span s", "wall s", "raw msgs/s", "ours/raw"]
        print(table(headers, rows, "rrrrrrr"))
        print("ours/raw compares wall-clock rates: job rows, claims and finishes included")
        print()
        rows = []
        cases = [
            (1000, 0.0, args.latency_jobs),
            (1000, args.idle_gap, args.idle_jobs),
            (100, args.idle_gap, args.idle_jobs),
        ]
        for idle, gap, count in cases:
            pool = WorkerPool(broker, replace(config, idle_poll_ms=idle))
            pickup, run = await _pickup(db, service, dispatcher, pool, count, gap)
            for name, figures in (("pickup", pickup), ("run+finish", run)):
                rows.append(
                    [str(idle), f"{gap:g}", str(count), name, ms(figures.p50), ms(figures.p95),
                     ms(figures.p99), ms(figures.mean)]
                )  # fmt: skip
        print("## pickup (one job at a time into a 1-thread pool), ms")
        headers = ["idle_poll_ms", "gap s", "jobs", "phase", "p50", "p95", "p99", "mean"]
        print(table(headers, rows, "rrrlrrrr"))
    finally:
        broker.flush_all()
        broker.close()
        await events.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jobs", description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per drain (default 2000)")
    parser.add_argument("--threads", default="1,4,16", help="worker threads per drain")
    parser.add_argument("--latency-jobs", type=int, default=200, help="back-to-back pickups")
    parser.add_argument("--idle-jobs", type=int, default=15, help="pickups after idling")
    parser.add_argument("--idle-gap", type=float, default=2.0, help="seconds idle before each")
    parser.add_argument("--home", help="FORTEMI_HOME to use and keep (default: a temp dir)")
    asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    main()
