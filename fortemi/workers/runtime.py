"""The job runtime of a worker process: one event loop, its pool, the executor, maintenance.

Threads and loops. Dramatiq delivers each ``wake`` message on one of its worker threads;
the job service is asyncio + asyncpg. A process therefore runs exactly one event loop
thread for all job execution, with a :class:`Database` pool created on that loop, and
each worker thread hands its wake-up to that loop and blocks until it is handled. So
``threads`` bounds how many jobs run at once, and the loop interleaves them.

Lifecycle, as Dramatiq middleware hooks on :class:`JobRuntime`:

* ``before_worker_boot``: start the loop; connect; warm each served tier (GPU tiers load
  their model here, before any message is consumed); start maintenance. A failure here
  stops :meth:`dramatiq.Worker.start` (it raises), so a worker that cannot work never
  consumes.
* ``before_worker_shutdown``: stop claiming; handlers still running after
  ``grace_seconds`` are cancelled and handed back to pending.
* ``after_worker_shutdown``: stop maintenance, close the pool, stop the loop.

:mod:`fortemi.workers.pool` installs it (``WorkerPool``, ``run_worker_process``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import dramatiq
import redis.asyncio as redis
from dramatiq.middleware import MiddlewareError

from fortemi.platform.database import Database
from fortemi.platform.events import EventBus
from fortemi.platform.jobs.backoff import Backoff
from fortemi.platform.jobs.events import JobEventPublisher
from fortemi.platform.jobs.models import Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.settings import Settings
from fortemi.workers.broker import WakeReceiver
from fortemi.workers.dispatch import JobDispatcher, dispatch
from fortemi.workers.executor import JobExecutor
from fortemi.workers.loops import DEFAULT_RESEND_AFTER_SECONDS, MaintenanceLoop

__all__ = [
    "JobRuntime",
    "RegistryFactory",
    "Warmer",
    "WorkerBootError",
    "WorkerConfig",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

Warmer = Callable[[], Awaitable[None]]
"""Makes a tier ready before its worker consumes (loads and warms its model). Runs once
per worker start, on the job loop; raising stops the worker from starting."""

RegistryFactory = Callable[[Database], JobRegistry]


class WorkerBootError(MiddlewareError):
    """The worker could not start (database, warm-up). A MiddlewareError, so Dramatiq lets
    it propagate out of ``Worker.start`` instead of logging it and consuming anyway."""


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker process needs to run jobs; built at the edge (:meth:`from_settings`).

    ``registry`` is called once per worker start with the worker's own database, so
    handlers' services live on the job loop. ``warmers`` map a tier to what makes it ready
    (see :data:`Warmer`); tiers without one need no warming.
    """

    database_url: str
    registry: RegistryFactory
    # Where job events are published; None publishes none (tests of the bare machinery).
    redis_url: str | None = None
    lease_seconds: float = 60.0
    backoff: Backoff = field(default_factory=Backoff)
    maintenance_interval_seconds: float = 5.0
    resend_after_seconds: float = DEFAULT_RESEND_AFTER_SECONDS
    grace_seconds: float = 30.0
    statement_timeout_ms: int = 30_000
    # The longest an idle Dramatiq consumer waits between polls of Redis. Dramatiq's 1000
    # made a wake-up after a quiet spell wait ~420 ms (median) to be picked up, 100 ~60 ms
    # (benchmarks/jobs.py), for ~10 cheap Redis calls a second per queue.
    idle_poll_ms: int = 100
    warmers: Mapping[Tier, Warmer] = field(default_factory=dict)
    worker_id: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        database_url: str,
        *,
        registry: RegistryFactory,
        **overrides: Any,
    ) -> WorkerConfig:
        """The config for ``settings`` running ``registry``'s job types (the composition
        root assembles it: :func:`fortemi.runtime.job_registry`); ``overrides`` set any
        other field by name."""
        fields: dict[str, Any] = {
            "statement_timeout_ms": settings.db_statement_timeout_ms,
            "lease_seconds": settings.worker_lease_seconds,
            "grace_seconds": settings.worker_grace_seconds,
            "idle_poll_ms": settings.worker_idle_poll_ms,
            "maintenance_interval_seconds": settings.job_maintenance_interval_seconds,
            "resend_after_seconds": settings.job_resend_after_seconds,
        }
        return cls(
            database_url=database_url,
            registry=registry,
            **{**fields, **overrides},
        )


class _LoopThread:
    """An asyncio loop on a thread of its own, taking coroutines from other threads."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> None:
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        """Cancel what is left, stop the loop, close it."""
        if self._thread.is_alive():
            self.run(cancel_other_tasks())
            self.run(self.loop.shutdown_asyncgens())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        self.loop.close()


async def cancel_other_tasks() -> None:
    """Cancel every task of the running loop but the caller's, and wait for them."""
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class JobRuntime(WakeReceiver):
    """The worker side of a broker: receives wake-ups and runs them on the job loop.

    One instance per :class:`dramatiq.Worker`; installed by :class:`WorkerPool`.
    """

    def __init__(self, config: WorkerConfig, tiers: Sequence[Tier], threads: int) -> None:
        self._config = config
        self._tiers = tuple(dict.fromkeys(tiers))
        self._threads = threads
        self._loop: _LoopThread | None = None
        self._db: Database | None = None
        self._redis: redis.Redis | None = None
        self._executor: JobExecutor | None = None
        self._maintenance: MaintenanceLoop | None = None

    @property
    def executor(self) -> JobExecutor | None:
        return self._executor

    # -- Dramatiq hooks ----------------------------------------------------------------------

    def before_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._loop = _LoopThread("fortemi-jobs")
        self._loop.start()
        try:
            self._loop.run(self._open(broker))
        except Exception as exc:
            self._close()
            raise WorkerBootError(f"job worker cannot start: {type(exc).__name__}: {exc}") from exc
        log.info(
            "job worker %s serving %s",
            self._config.worker_id,
            ", ".join(tier.value for tier in self._tiers),
        )

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if self._loop is not None and self._executor is not None:
            self._loop.loop.call_soon_threadsafe(self._executor.drain, self._config.grace_seconds)

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._close()

    # -- wake-ups ----------------------------------------------------------------------------

    def receive(self, tier: Tier, job_id: str) -> None:
        loop, executor = self._loop, self._executor
        if loop is None or executor is None:
            log.error("wake(%s) on %s before the worker booted; dropped", job_id, tier)
            return
        # executor.wake never raises for a job; anything else is a bug worth a log line,
        # not a dead-lettered nudge.
        try:
            loop.run(executor.wake(tier, job_id))
        except Exception:
            log.exception("wake(%s) on %s failed", job_id, tier)

    # -- on the loop -------------------------------------------------------------------------

    async def _open(self, broker: dramatiq.Broker) -> None:
        config = self._config
        self._db = await Database.connect(
            config.database_url,
            min_size=1,
            # One connection per running job, plus its heartbeat's, plus maintenance.
            max_size=2 * self._threads + 2,
            statement_timeout_ms=config.statement_timeout_ms,
        )
        registry = config.registry(self._db)
        events: JobEventPublisher | None = None
        if config.redis_url is not None:
            self._redis = redis.Redis.from_url(config.redis_url)
            events = JobEventPublisher(EventBus(self._redis))
        service = JobService(
            self._db,
            registry,
            backoff=config.backoff,
            lease_seconds=config.lease_seconds,
            events=events,
        )
        dispatcher = JobDispatcher(broker)
        for tier in self._tiers:
            warmer = config.warmers.get(tier)
            if warmer is not None:
                log.info("warming tier %s", tier)
                await warmer()
        self._maintenance = MaintenanceLoop(
            service,
            dispatcher,
            interval_seconds=config.maintenance_interval_seconds,
            resend_after_seconds=config.resend_after_seconds,
        )
        self._executor = JobExecutor(
            service,
            registry,
            dispatcher,
            tiers=self._tiers,
            worker_id=config.worker_id,
            lease_seconds=config.lease_seconds,
            on_wake_failed=self._maintenance.request_resend,
        )
        await self._enqueue_startup_jobs(registry, service, dispatcher)
        self._maintenance.start()

    async def _enqueue_startup_jobs(
        self, registry: JobRegistry, service: JobService, dispatcher: JobDispatcher
    ) -> None:
        """What the features ask to run at each start (deduplicated by their keys, so
        several workers starting together enqueue each once). A failure here is logged and
        the worker runs anyway: the next start sweeps again."""
        try:
            specs = await registry.startup_jobs()
            if specs:
                created = [job for job, new in await service.submit_many(specs) if new]
                await dispatch(service, dispatcher, created)
        except Exception:
            log.exception("start-up jobs were not enqueued")

    async def _shutdown(self) -> None:
        if self._maintenance is not None:
            await self._maintenance.stop()
        # Only a handler that outlived the grace period and ignored its cancellation is left
        # here; it must let go of its connection, or closing the pool would wait for it.
        await cancel_other_tasks()
        if self._redis is not None:
            await self._redis.aclose()
        if self._db is not None:
            await self._db.close()

    def _close(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            loop.run(self._shutdown())
        except Exception:
            log.warning("job worker did not close cleanly", exc_info=True)
        finally:
            loop.stop()
            self._executor = None
            self._maintenance = None
            self._db = None
            self._redis = None
