"""PostgreSQL stopped and started again under a running worker: no job lost, no restart.

The session's server is shared with every other test, so each test here runs a PostgreSQL
of its own (pgserver's binaries, its own data directory and socket) and stops that one with
``pg_ctl stop -m fast``, which terminates every backend: a running job's transaction, the
heartbeat's and the maintenance loop's connections, and the test's own. Messages still go
through the session's Redis, in the module's own namespace.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.errors import Unavailable
from fortemi.platform.jobs.models import JobStatus
from fortemi.platform.jobs.service import JobService
from fortemi.platform.migrations import Migrations
from fortemi.workers.dispatch import JobDispatcher, dispatch
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import FAST_BACKOFF, POLLS, Jobs, eventually
from tests.integration.workers.runtime.jobtypes import DDL, build_registry

with warnings.catch_warnings():
    # pgserver asks platformdirs for a runtime dir at import, which warns on hosts without
    # XDG_RUNTIME_DIR (see fortemi.platform.embedded).
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    # pg_ctl is one of the wrappers pgserver makes at import, one per bundled binary.
    from pgserver import pg_ctl  # type: ignore[attr-defined]
    from pgserver.postgres_server import get_server

ROOT = Path(__file__).resolve().parents[4]
LEASE_SECONDS = 2.0  # heartbeats every 2/3 s
GRACE_SECONDS = 0.5
# Longer than the lease: the interrupted job's lease runs out while the server is down.
OUTAGE_SECONDS = 3.0
JOBS = 30
DONE_BEFORE = 10  # released up front: completed before the outage
# Wake-ups that arrive while claims cannot reach the server are spent; the worker asks its
# relay to re-send every due one on its next pass rather than after the usual 30 s
# (FORTEMI_JOB_RESEND_AFTER_SECONDS, left at its default here so the test shows it).
WORKER_ENV = {"FORTEMI_JOB_MAINTENANCE_INTERVAL_SECONDS": "0.5"}


@dataclass(frozen=True)
class PrivatePostgres:
    """A PostgreSQL server of one test's own, stopped and started on the same data dir."""

    pgdata: Path
    socket_dir: Path
    system_user: str | None  # who runs the server (pgserver's own user when we are root)

    @classmethod
    def create(cls, pgdata: Path) -> PrivatePostgres:
        # pgserver makes the data dir (as its own user when we are root) and starts the
        # server on a Unix socket only; releasing its handle with cleanup_mode=None leaves
        # the server running, and from then on this object alone starts and stops it.
        server = get_server(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
        server.cleanup()
        assert info.socket_dir is not None
        return cls(server.pgdata, info.socket_dir, server.system_user)

    @property
    def uri(self) -> str:
        # Same socket across restarts, so the same URI.
        return f"postgresql://postgres:@/postgres?host={self.socket_dir}"

    def stop(self, mode: str = "fast") -> None:
        """``fast``: open transactions are rolled back and every client is disconnected."""
        self._pg_ctl("-m", mode, "stop")

    def start(self) -> None:
        """Start again with the options pgserver used: no TCP, the same socket dir."""
        log = str(self.pgdata / "log")
        self._pg_ctl("-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", log, "start")

    def close(self) -> None:
        """Stop the server if it runs, and delete its data directory."""
        if (self.pgdata / "postmaster.pid").exists():
            try:
                self.stop("immediate")
            except subprocess.CalledProcessError:  # not running after all
                pass
        shutil.rmtree(self.pgdata, ignore_errors=True)

    def _pg_ctl(self, *args: str) -> None:
        # -w: return once the server is up (or gone).
        pg_ctl(["-w", "-t", "60", *args], pgdata=self.pgdata, user=self.system_user)


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[PrivatePostgres]:
    server = PrivatePostgres.create(tmp_path / "pg")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def private_db(postgres: PrivatePostgres) -> AsyncIterator[Database]:
    database = await Database.connect(postgres.uri, min_size=1, max_size=4)
    try:
        await Migrations().migrate_shared(database)
        async with database.connection() as conn:
            await conn.execute(DDL)
        yield database
    finally:
        await database.close()


@pytest.fixture
def private_jobs(private_db: Database, broker: RedisBroker) -> Jobs:
    service = JobService(private_db, build_registry(private_db), backoff=FAST_BACKOFF)
    return Jobs(private_db, service, JobDispatcher(broker))


@dataclass(frozen=True)
class WorkerProcess:
    process: asyncio.subprocess.Process
    log: Path

    async def alive(self) -> None:
        """Fail with the worker's output if it exited."""
        if self.process.returncode is not None:
            output = await asyncio.to_thread(self.log.read_text)
            pytest.fail(f"the worker process exited with {self.process.returncode}:\n{output}")


@pytest.fixture
async def worker(
    postgres: PrivatePostgres,
    private_db: Database,
    broker: RedisBroker,
    service_urls: ServiceUrls,
    tmp_path: Path,
) -> AsyncIterator[WorkerProcess]:
    """``fortemi worker --tier cpu --threads 1`` on the private server, as a process.

    Depends on ``private_db`` so the schema exists before it starts, and so it is stopped
    before the server is.
    """
    env = {
        **os.environ,
        **WORKER_ENV,
        "DATABASE_URL": postgres.uri,
        "REDIS_URL": service_urls.redis,
        "FORTEMI_HOME": str(tmp_path / "home"),
    }
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.integration.workers.runtime.worker_main",
            broker.namespace,
            str(LEASE_SECONDS),
            str(GRACE_SECONDS),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        yield WorkerProcess(process, log)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), timeout=60)
            except TimeoutError:
                process.kill()
                await process.wait()


async def test_a_query_cut_by_a_postgres_stop_is_unavailable_and_the_pool_reconnects_after(
    postgres: PrivatePostgres, private_db: Database
) -> None:
    async def long_query() -> None:
        async with private_db.shared_transaction() as conn:
            await conn.execute("SELECT pg_sleep(600)")

    async def running() -> bool:
        active: int = await private_db.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE state = 'active' AND query = 'SELECT pg_sleep(600)'"
        )
        return active == 1

    cut = asyncio.create_task(long_query())
    try:
        await eventually(running, "the long query to run")
        await asyncio.to_thread(postgres.stop)
        with pytest.raises(Unavailable):
            await cut
        with pytest.raises(Unavailable):
            await private_db.fetchval("SELECT 1")
    finally:
        cut.cancel()
    await asyncio.to_thread(postgres.start)
    # No reconnect call: the pool replaces the connections the stop closed.
    assert await private_db.fetchval("SELECT 1") == 1


async def test_postgres_restart_under_a_running_job_loses_no_job_and_the_same_worker_reconnects(
    postgres: PrivatePostgres,
    private_db: Database,
    private_jobs: Jobs,
    worker: WorkerProcess,
) -> None:
    jobs = private_jobs
    submitted = [await jobs.submit(jobtypes.PG_RESTART, send=False) for _ in range(JOBS)]
    for job in submitted[:DONE_BEFORE]:
        await jobs.release(job.id)
    assert await dispatch(jobs.service, jobs.dispatcher, submitted) == JOBS

    # One thread, and the oldest runnable job is claimed first: the released jobs complete,
    # then the next one holds its transaction open for a release that comes after the outage.
    held = submitted[DONE_BEFORE]

    async def holding() -> bool:
        await worker.alive()
        return (await jobs.get(held.id)).status is JobStatus.RUNNING

    await eventually(holding, "the worker to run the jobs up to the held one")
    for job in submitted[:DONE_BEFORE]:
        assert (await jobs.get(job.id)).status is JobStatus.COMPLETED
    assert await jobs.executions(held.id) == [1]
    first_start = await private_db.fetchval("SELECT pg_postmaster_start_time()")

    await asyncio.to_thread(postgres.stop)
    await asyncio.sleep(OUTAGE_SECONDS)
    await asyncio.to_thread(postgres.start)
    restarted_at = await private_db.fetchval("SELECT pg_postmaster_start_time()")
    assert restarted_at > first_start
    await worker.alive()

    for job in submitted[DONE_BEFORE:]:
        await jobs.release(job.id)
    for job in submitted:
        done = await jobs.reach(job.id, JobStatus.COMPLETED, polls=2 * POLLS)
        # Finished by the one worker process this test started, before and after the outage.
        assert done.result == {"pid": worker.process.pid}
        assert await jobs.effects(job.id) == 1
    await worker.alive()

    # The held run was killed mid-transaction, its effect rolled back with it, and the job
    # ran again; it and every job behind it ran on the restarted server.
    assert await jobs.executions(held.id) == [1, 2]
    async with private_db.connection() as conn:
        rows = await conn.fetch(
            "SELECT DISTINCT job_id FROM worker_test.execution WHERE at > $1", restarted_at
        )
    assert {row["job_id"] for row in rows} == {job.id for job in submitted[DONE_BEFORE:]}
