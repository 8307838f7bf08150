"""Running claimed jobs: handler lookup, lease renewal, outcome, and what happens next.

One :class:`JobExecutor` per worker process, living on that process's job event loop.
Each ``wake`` message becomes one call of :meth:`JobExecutor.wake`, which claims at most
one job and runs it to its end. It does not loop to claim more: every pending job has a
wake-up of its own (sent after commit, re-sent by the relay if lost), so one claim per
message drains the backlog, keeps every worker thread's share of work fair, and a message
whose job another thread took simply claims the next best one.

Handlers run as tasks on the shared loop: they must await I/O and push CPU-heavy work to
a thread (``asyncio.to_thread``), or they stall every other job of the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from fortemi.platform.jobs.models import (
    NEXT_TIER,
    FailureClass,
    HandlerContext,
    Job,
    JobOutcome,
    JobSpec,
    JobStatus,
    Tier,
)
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.metrics import JOB_SECONDS, JOBS_FINISHED
from fortemi.workers.dispatch import JobDispatcher, dispatch

__all__ = ["CLAIM_ORDER", "JobExecutor"]

log = logging.getLogger(__name__)

# Which tiers a wake-up on a queue may claim from, best first. A standard-GPU wake-up takes
# waiting fast-GPU work first: those jobs are the short, latency-bound ones, and a worker
# serving both tiers has that model warm. The order is filtered by what a worker serves:
# a worker without fast_gpu never claims fast_gpu jobs (its model may not be loaded).
CLAIM_ORDER: dict[Tier, tuple[Tier, ...]] = {
    Tier.CPU: (Tier.CPU,),
    Tier.FAST_GPU: (Tier.FAST_GPU,),
    Tier.STANDARD_GPU: (Tier.FAST_GPU, Tier.STANDARD_GPU),
}

# A wake-up that arrived before its job was due is sent again for the rest of the wait;
# at least this long, so clocks that disagree by a little cannot make it spin.
_REWAKE_FLOOR_MS = 250


class JobExecutor:
    """Claims and runs jobs for the tiers a worker serves.

    Contract per claimed job: the handler registered for its type runs with a
    :class:`HandlerContext`; the lease is renewed every ``lease_seconds / 3`` while it
    runs; its outcome is recorded with ``finish``; a job that goes back to pending (a
    retry) gets its delayed wake-up. A handler that raises is logged and recorded as
    ``retry(TRANSIENT, <exception type name>)``; an unknown type fails for good as
    ``unknown_job_type``; a lost lease (reaped, cancelled) cancels the handler and
    records nothing, since the job is no longer ours. Nothing a job does escapes
    :meth:`wake`.
    """

    def __init__(
        self,
        service: JobService,
        registry: JobRegistry,
        dispatcher: JobDispatcher,
        *,
        tiers: Sequence[Tier],
        worker_id: str,
        lease_seconds: float,
        on_wake_failed: Callable[[], None] | None = None,
    ) -> None:
        if not tiers:
            raise ValueError("a worker serves at least one tier")
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        self._service = service
        self._registry = registry
        self._dispatcher = dispatcher
        self._tiers = tuple(dict.fromkeys(tiers))
        self._worker_id = worker_id
        self._heartbeat_seconds = lease_seconds / 3
        self._runs = itertools.count(1)
        self._running: dict[UUID, asyncio.Task[JobOutcome]] = {}
        self._draining = False
        self._shutdown_cancelled: set[UUID] = set()
        self._on_wake_failed = on_wake_failed

    @property
    def tiers(self) -> tuple[Tier, ...]:
        return self._tiers

    def claim_order(self, tier: Tier) -> tuple[Tier, ...]:
        """The tiers a wake-up on ``tier``'s queue claims from, best first."""
        return tuple(t for t in CLAIM_ORDER[tier] if t in self._tiers)

    @property
    def running(self) -> int:
        """How many handlers are running now."""
        return len(self._running)

    async def wake(self, tier: Tier, job_id: str) -> Job | None:
        """Handle one wake-up: claim the best runnable job and run it. Never raises.

        Returns the job as finished (or ``None`` when there was nothing to do or the
        lease was lost).
        """
        try:
            if self._draining:
                # Shutting down: leave the nudge for another worker rather than drop it.
                await asyncio.to_thread(self._dispatcher.wake, tier, UUID(job_id))
                return None
            # A fresh owner per claim: a job reclaimed by this same process after its lease
            # expired must not keep the stale run's heartbeats valid.
            owner = f"{self._worker_id}/{next(self._runs)}"
            job = await self._service.claim(self.claim_order(tier), owner)
            if job is None:
                await self._rewake_if_early(job_id)
                return None
            return await self.run(job, owner)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Infrastructure trouble (database, Redis). A claimed job's lease runs out and
            # the reaper returns it; an unclaimed one is re-sent by the relay.
            log.exception("wake-up for job %s on %s failed", job_id, tier)
            if self._on_wake_failed is not None:
                self._on_wake_failed()  # this wake-up is spent: have it re-sent soon
            return None

    async def run(self, job: Job, owner: str) -> Job | None:
        """Run the claimed ``job`` (leased to ``owner``) to its recorded outcome."""
        try:
            job_type = self._registry.get(job.type)
        except KeyError:
            log.error("job %s has unknown type %r; failing it", job.id, job.type)
            return await self._finish(job, owner, JobOutcome.failure("unknown_job_type"))

        context = HandlerContext(
            job=job,
            report_progress=lambda percent, message: self._progress(job, owner, percent, message),
            enqueue=self._enqueue,
            escalate=lambda reason, carry=None: self._escalate(job, reason, carry),
            publish=lambda event: self._service.announce(job, event),
        )

        async def call() -> JobOutcome:
            return await job_type.handler(context)

        started = time.monotonic()
        handler = asyncio.create_task(call(), name=f"job-{job.id}")
        self._running[job.id] = handler
        lease_lost = asyncio.Event()
        heartbeat = asyncio.create_task(self._heartbeat(job, owner, handler, lease_lost))
        outcome: JobOutcome | None = None
        try:
            outcome = await handler
        except asyncio.CancelledError:
            if lease_lost.is_set():
                log.warning("job %s lost its lease; its handler was stopped", job.id)
                return None
            if job.id not in self._shutdown_cancelled:
                raise
            # Shutting down: handed back below, at once and uncounted.
        except Exception as exc:
            log.exception("job %s (%s) raised %s", job.id, job.type, type(exc).__name__)
            outcome = JobOutcome.retry(FailureClass.TRANSIENT, type(exc).__name__)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            self._running.pop(job.id, None)
            self._shutdown_cancelled.discard(job.id)
        if outcome is None:
            return await self._release(job, owner)
        finished = await self._finish(job, owner, outcome)
        if finished is not None:
            labels = (job.tier.value, job_type.name, finished.status.value)
            JOBS_FINISHED.labels(*labels).inc()
            JOB_SECONDS.labels(*labels).observe(time.monotonic() - started)
        return finished

    def drain(self, grace_seconds: float) -> None:
        """Stop claiming; cancel handlers still running after ``grace_seconds``.

        Call on the executor's loop. Cancelled jobs are released (pending again, the
        attempt not counted, code ``worker_shutdown``) so another worker takes them now.
        """
        self._draining = True
        asyncio.get_running_loop().call_later(grace_seconds, self._cancel_running)

    def _cancel_running(self) -> None:
        for job_id, task in list(self._running.items()):
            log.warning("job %s still running at shutdown; handing it back", job_id)
            self._shutdown_cancelled.add(job_id)
            task.cancel()

    async def _release(self, job: Job, owner: str) -> Job | None:
        released = await self._service.release(job.id, owner)
        if released is not None:
            # Another worker takes it now rather than waiting out the lease.
            await dispatch(self._service, self._dispatcher, [released])
        return released

    async def _finish(self, job: Job, owner: str, outcome: JobOutcome) -> Job | None:
        finished = await self._service.finish(job.id, owner, outcome)
        if finished is None:
            log.warning("job %s: lease lost before its outcome was recorded", job.id)
            return None
        if finished.status is JobStatus.PENDING:
            await dispatch(self._service, self._dispatcher, [finished])
        return finished

    async def _heartbeat(
        self, job: Job, owner: str, handler: asyncio.Task[JobOutcome], lease_lost: asyncio.Event
    ) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_seconds)
            try:
                ours = await self._service.heartbeat(job.id, owner)
            except Exception:
                # A blip: the lease has two more intervals to go before it expires.
                log.warning("heartbeat for job %s failed", job.id, exc_info=True)
                continue
            if not ours:
                lease_lost.set()
                handler.cancel()
                return

    async def _progress(self, job: Job, owner: str, percent: int, message: str | None) -> None:
        if not await self._service.report_progress(job.id, owner, percent, message):
            # Reaped or cancelled meanwhile; the heartbeat stops the handler on its next beat.
            log.info("job %s: progress refused, the lease is no longer ours", job.id)

    async def _enqueue(self, spec: JobSpec) -> Job:
        job, created = await self._service.submit(spec)
        if created:
            await dispatch(self._service, self._dispatcher, [job])
        return job

    async def _escalate(self, job: Job, reason: str, carry: Mapping[str, Any] | None) -> Job:
        up = NEXT_TIER.get(job.tier)
        if up is None:
            raise ValueError(f"job {job.id} runs on {job.tier}, the top tier: no escalation")
        prior = job.payload.get("escalation")
        prior = prior if isinstance(prior, dict) else {}
        escalation = {
            "origin": prior.get("origin", str(job.id)),
            "fromJob": str(job.id),
            "fromTier": job.tier.value,
            "reason": reason,
            "path": [*prior.get("path", ()), job.tier.value],
        }
        if carry is not None:
            escalation["carried"] = dict(carry)
        return await self._enqueue(
            JobSpec(
                type=job.type,
                memory=job.memory,
                payload={**job.payload, "escalation": escalation},
                priority=job.priority,
                tier=up,
                max_attempts=job.max_attempts,
                # One escalation per tier while it is pending; a lower-tier job that is
                # pending under the original key (a newer trigger) is left alone.
                dedupe_key=f"{job.dedupe_key}@{up.value}" if job.dedupe_key else None,
                requested_by=job.requested_by,
            )
        )

    async def _rewake_if_early(self, job_id: str) -> None:
        # Redis delivered the wake-up before PostgreSQL thought its job due (clock skew,
        # or a wait longer than the broker's maximum delay): wake it again for the rest.
        try:
            named = await self._service.get(UUID(job_id))
        except ValueError:
            log.error("wake-up with a malformed job id %r dropped", job_id)
            return
        if named is None or named.status is not JobStatus.PENDING:
            return
        if named.tier not in self._tiers or named.next_attempt_at <= datetime.now(UTC):
            return
        await asyncio.to_thread(self._dispatcher.send, named, min_delay_ms=_REWAKE_FLOOR_MS)
