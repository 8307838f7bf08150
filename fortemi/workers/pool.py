"""Running workers: :class:`WorkerPool` in any process, :func:`run_worker_process` as one.

``fortemi serve`` starts a :class:`WorkerPool` for every tier inside the server process,
against the embedded (or configured) Redis; ``fortemi worker --tier ... --threads N``
calls :func:`run_worker_process`. Both run the same :class:`JobRuntime`.

Why not the ``dramatiq`` command: it imports a module for a global broker and forks
processes itself, while a Fortemi worker needs the embedded services, its settings, a
warm-up before consuming and the maintenance loop. Scale by running more ``fortemi
worker`` processes (or replicas per tier) instead.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Mapping, Sequence
from types import FrameType

import dramatiq
from dramatiq.middleware import Middleware

from fortemi.platform.database import Database
from fortemi.platform.embedded import EmbeddedServices
from fortemi.platform.jobs.backoff import Backoff
from fortemi.platform.jobs.models import Tier
from fortemi.platform.migrations import Migrations
from fortemi.platform.settings import Settings
from fortemi.workers.broker import DEFAULT_NAMESPACE, WakeReceiver, build_broker, queue_name
from fortemi.workers.runtime import (
    JobRuntime,
    RegistryFactory,
    Warmer,
    WorkerBootError,
    WorkerConfig,
)

__all__ = ["WorkerPool", "run_worker_process"]

log = logging.getLogger(__name__)


class WorkerPool:
    """Runs jobs of some tiers in this process until stopped.

    ``start(tiers, threads)`` installs a :class:`JobRuntime` on ``broker`` and starts a
    :class:`dramatiq.Worker` consuming the tiers' queues with ``threads`` threads (it
    returns once warm and consuming; WorkerBootError if it cannot start). ``stop()`` waits
    for running jobs (up to the config's grace), then leaves the broker as it found it, so
    a pool can be started again. One running pool per broker.
    """

    def __init__(self, broker: dramatiq.Broker, config: WorkerConfig) -> None:
        self._broker = broker
        self._config = config
        self._worker: dramatiq.Worker | None = None
        self._runtime: JobRuntime | None = None
        self._middleware_before: list[Middleware] = []

    @property
    def runtime(self) -> JobRuntime | None:
        return self._runtime

    def start(self, tiers: Sequence[Tier], threads: int) -> None:
        if self._worker is not None:
            raise RuntimeError("this worker pool is running already")
        if not tiers or threads < 1:
            raise ValueError("a worker needs at least one tier and one thread")
        if any(isinstance(m, WakeReceiver) for m in self._broker.middleware):
            raise RuntimeError("another worker is running on this broker")
        runtime = JobRuntime(self._config, tiers, threads)
        before = list(self._broker.middleware)
        self._broker.add_middleware(runtime)
        worker = dramatiq.Worker(
            self._broker,
            queues={queue_name(tier) for tier in tiers},
            worker_threads=threads,
            worker_timeout=self._config.idle_poll_ms,
        )
        try:
            worker.start()
        except BaseException:
            self._broker.middleware[:] = before
            raise
        self._worker, self._runtime, self._middleware_before = worker, runtime, before

    def stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        # Dramatiq waits this long for worker threads; ours finish within the grace period
        # (handlers are cancelled then), so the margin only covers recording outcomes.
        worker.stop(timeout=int((self._config.grace_seconds + 30) * 1000))
        # Worker.start adds its own consumer middleware and never removes it; restoring the
        # list lets this broker host another worker later (tests start several).
        self._broker.middleware[:] = self._middleware_before
        self._runtime = None


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("%s received; stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


async def _migrate(settings: Settings, database_url: str) -> None:
    db = await Database.connect(database_url, min_size=1, max_size=1)
    try:
        await Migrations(settings.migrations_dir).migrate_shared(db)
    finally:
        await db.close()


def run_worker_process(
    settings: Settings,
    tiers: Sequence[Tier],
    threads: int,
    *,
    registry: RegistryFactory,
    warmers: Mapping[Tier, Warmer] | None = None,
    lease_seconds: float | None = None,
    backoff: Backoff | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    maintenance_interval_seconds: float | None = None,
    resend_after_seconds: float | None = None,
    grace_seconds: float | None = None,
) -> int:
    """``fortemi worker``: run jobs of ``tiers`` with ``threads`` threads until SIGTERM/SIGINT.

    Reaches PostgreSQL and Redis as ``fortemi serve`` does (started from the data
    directory when the settings leave them unconfigured), applies the shared migrations,
    and stops cleanly on a signal: no new claims, running jobs get ``grace_seconds``.
    Call from the main thread (it installs signal handlers). Returns the exit status.
    ``registry`` builds the job types it runs (:func:`fortemi.runtime.job_registry`).
    """
    stop = threading.Event()
    _stop_on_signals(stop)
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        asyncio.run(_migrate(settings, urls.database))
        # Arguments given here win over the settings (tests shorten leases this way).
        given = {
            "lease_seconds": lease_seconds,
            "maintenance_interval_seconds": maintenance_interval_seconds,
            "resend_after_seconds": resend_after_seconds,
            "grace_seconds": grace_seconds,
        }
        config = WorkerConfig.from_settings(
            settings,
            urls.database,
            redis_url=urls.redis,
            registry=registry,
            backoff=backoff or Backoff(),
            warmers=dict(warmers or {}),
            **{name: value for name, value in given.items() if value is not None},
        )
        return _run_pool(
            build_broker(urls.redis, namespace=namespace), config, tiers, threads, stop
        )
    finally:
        services.stop()


def _run_pool(
    broker: dramatiq.Broker,
    config: WorkerConfig,
    tiers: Sequence[Tier],
    threads: int,
    stop: threading.Event,
) -> int:
    """Run a pool on ``broker`` until ``stop`` is set; 1 if it could not boot."""
    pool = WorkerPool(broker, config)
    try:
        try:
            pool.start(tiers, threads)
        except WorkerBootError as exc:
            log.error("%s", exc)
            return 1
        # Wake periodically: a signal handler runs only between bytecodes of the main
        # thread, and a bare wait() is not guaranteed to return for it on every platform.
        while not stop.wait(1.0):
            pass
    finally:
        pool.stop()
        broker.close()
    return 0
