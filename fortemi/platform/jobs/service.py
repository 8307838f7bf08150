"""Job operations: enqueue, claim, lease, finish, reap, relay, and the operator's controls.

The life of a job::

    pending ──claim──► running ──finish(success)──► completed
       ▲                  │ ──finish(failure)──► failed            (permanent)
       │                  │ ──finish(retry) / reap, attempts left──► pending (later)
       │                  │ ──finish(retry) / reap, none left──► failed
       └──retry()── failed/cancelled ◄──cancel()── pending/running

A message is a wake-up, not an assignment: a worker woken by one claims the best runnable
job of its tiers, whichever that is. So priority holds under a backlog, a duplicated
message costs one empty claim, and a lost one is covered by the relay (:meth:`due_for_send`).
A running job holds a lease that its worker renews; :meth:`finish` applies only under that
lease, so a worker that was reaped or cancelled cannot overwrite what happened since.

Every change is announced after its commit when the service has a
:class:`~fortemi.platform.jobs.events.JobEventPublisher` (job.created, job.started, ...):
the API's and every worker's service do, so subscribers and webhooks hear of a change
whichever process made it. Jobs that :meth:`enqueue` adds in a caller's transaction are
announced by the caller after commit (:meth:`announce_created`).

Errors: BadUserInput (invalid spec, filter or cursor), NotFound (no such job or memory),
Conflict (the job is in the wrong state for the operation). Handler-contract violations
(an outcome that is not success/failure/retry, a result that is not JSON) are bugs in the
caller: ValueError, raised before anything is written.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID, uuid4

from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.events import Event
from fortemi.platform.jobs.backoff import Backoff
from fortemi.platform.jobs.cursor import decode_cursor, keyset_page, through
from fortemi.platform.jobs.events import JobEventPublisher
from fortemi.platform.jobs.models import FailureClass, Job, JobOutcome, JobSpec, JobStatus, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.repository import JobPause, JobRepository, LiveRow
from fortemi.platform.jobs.validation import (
    check_outcome,
    validate_filter,
    validate_memory,
    validate_page_size,
    validate_spec,
)
from fortemi.platform.pages import Page, rows_to_fetch

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "JobFilter", "JobPage", "JobService", "JobStats"]

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
# Rounds of insert-or-read for a dedupe key. A second round is needed only when the pending
# job holding the key left pending between the two statements; a third, almost never.
_DEDUPE_ROUNDS = 5
_DEFAULT_BACKOFF = Backoff()


@dataclass(frozen=True)
class JobFilter:
    """List filters; each one given narrows the list. Times are half-open: [after, before)."""

    status: JobStatus | None = None
    type: str | None = None
    tier: Tier | None = None
    memory: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


JobPage = Page[Job]  # (opaque cursor, job), newest first


@dataclass(frozen=True)
class JobStats:
    by_status: dict[str, int]  # every status, zero included
    by_tier_pending: dict[str, int]  # every tier, zero included
    oldest_pending_at: datetime | None  # created_at of the oldest pending job


class JobService:
    """Jobs in ``public.job``. Every method but :meth:`enqueue` runs in its own shared
    transaction; times are PostgreSQL's, so hosts with skewed clocks agree."""

    def __init__(
        self,
        db: Database,
        registry: JobRegistry,
        *,
        backoff: Backoff = _DEFAULT_BACKOFF,
        lease_seconds: float = 60.0,
        rng: random.Random | None = None,
        events: JobEventPublisher | None = None,
    ) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be positive, not {lease_seconds}")
        self._db = db
        self._registry = registry
        self._backoff = backoff
        self._lease = float(lease_seconds)
        self._rng = rng
        self._repo = JobRepository()
        self._events = events

    # -- enqueueing ------------------------------------------------------------------------

    async def enqueue(self, conn: Connection, spec: JobSpec) -> tuple[Job, bool]:
        """Add a job in the caller's transaction ``conn``, so it commits or rolls back with
        the change that caused it. Returns (job, created).

        The type must be registered; tier, priority and max_attempts default from it. With a
        ``dedupe_key`` already held by a pending job, that job is returned (created False)
        and nothing is written, even when many transactions enqueue the key at once. Keys
        are global across types and memories, so callers namespace them
        (``"EmbedNote:<memory>:<note id>"``). The new row has ``enqueued_at`` NULL: the
        caller sends its message after commit and then calls :meth:`mark_sent`; if it
        never does, the relay sends it.
        """
        row = validate_spec(spec, self._registry, uuid4())
        for _ in range(_DEDUPE_ROUNDS):
            job = await self._repo.insert(conn, row)
            if job is not None:
                return job, True
            if row.dedupe_key is None:
                raise RuntimeError("the job insert refused a job that has no dedupe key")
            existing = await self._repo.pending_by_key(conn, row.dedupe_key)
            if existing is not None:
                return existing, False
            # The job holding the key stopped being pending in between: the key is free.
        raise Conflict(
            "Jobs with this dedupe key are being claimed as fast as they are enqueued; retry",
            dedupe_key=row.dedupe_key,
        )

    async def enqueue_many(
        self, conn: Connection, specs: Sequence[JobSpec]
    ) -> builtins.list[tuple[Job, bool]]:
        """:meth:`enqueue` for many jobs in one statement (and one more for the keys held
        already), in ``specs``' order. Two specs with one dedupe key get the same job."""
        rows = [validate_spec(spec, self._registry, uuid4()) for spec in specs]
        found: dict[UUID, tuple[Job, bool]] = {}  # row id → (job, created)
        todo = rows
        for _ in range(_DEDUPE_ROUNDS):
            inserted = {job.id: job for job in await self._repo.insert_many(conn, todo)}
            found.update({job_id: (job, True) for job_id, job in inserted.items()})
            waiting = [row for row in todo if row.id not in inserted]
            keys = [row.dedupe_key for row in waiting if row.dedupe_key is not None]
            holders = await self._repo.pending_by_keys(conn, keys) if keys else {}
            todo = []
            for row in waiting:
                holder = holders.get(row.dedupe_key or "")
                if holder is not None:
                    found[row.id] = (holder, False)
                else:  # the job holding the key stopped being pending in between
                    todo.append(row)
            if not todo:
                return [found[row.id] for row in rows]
        raise Conflict(
            "Jobs with this dedupe key are being claimed as fast as they are enqueued; retry",
            dedupe_key=todo[0].dedupe_key,
        )

    async def submit(self, spec: JobSpec) -> tuple[Job, bool]:
        """:meth:`enqueue` in a transaction of its own (announced, when created)."""
        async with self._db.shared_transaction() as conn:
            job, created = await self.enqueue(conn, spec)
        if created:
            await self.announce_created([job])
        return job, created

    async def submit_many(self, specs: Sequence[JobSpec]) -> builtins.list[tuple[Job, bool]]:
        """:meth:`enqueue_many` in a transaction of its own: all the jobs or none; the
        created ones announced after commit."""
        async with self._db.shared_transaction() as conn:
            found = await self.enqueue_many(conn, specs)
        created = [job for job, new in found if new]
        if created:
            await self.announce_created(created)
        return found

    def knows(self, type_name: str) -> bool:
        """Whether a job type of that name is registered (can be enqueued)."""
        return type_name in self._registry

    async def announce_created(self, jobs: Sequence[Job]) -> None:
        """Publish ``job.created`` for jobs :meth:`enqueue` added in a caller's transaction;
        call after it commits (:meth:`submit` does this itself)."""
        await self._announce(jobs, "job.created", actor=jobs[0].requested_by if jobs else None)

    # -- the worker's side -----------------------------------------------------------------

    async def claim(self, tiers: Sequence[Tier], worker_id: str) -> Job | None:
        """The best runnable job of the first tier in ``tiers`` that has one, now running
        under ``worker_id``'s lease (attempts counted); None when nothing is runnable.

        Runnable: pending, ``next_attempt_at`` passed, neither its memory nor everything
        paused. Best: highest priority, then the longest runnable, then the oldest.
        Concurrent claimers never get the same job. The attempt's progress starts at 0.
        """
        job: Job | None = None
        async with self._db.shared_transaction() as conn:
            for tier in dict.fromkeys(Tier(tier) for tier in tiers):
                job = await self._repo.claim(conn, tier, worker_id, self._lease)
                if job is not None:
                    break
        if job is not None:
            await self._announce([job])
        return job

    async def heartbeat(self, job_id: UUID, worker_id: str) -> bool:
        """Extend the lease; False if the job no longer runs under ``worker_id`` (it was
        reaped or cancelled: the worker should stop)."""
        async with self._db.shared_transaction() as conn:
            return await self._repo.heartbeat(conn, job_id, worker_id, self._lease)

    async def report_progress(
        self, job_id: UUID, worker_id: str, percent: int, message: str | None
    ) -> bool:
        """Record progress (clamped to 0..100) and renew the lease; False as for heartbeat."""
        percent = min(max(int(percent), 0), 100)
        async with self._db.shared_transaction() as conn:
            job = await self._repo.progress(conn, job_id, worker_id, percent, message, self._lease)
        if job is None:
            return False
        await self._announce([job], "job.progress")
        return True

    async def finish(self, job_id: UUID, worker_id: str, outcome: JobOutcome) -> Job | None:
        """Settle a run: completed, failed, or pending again after a backoff delay.

        Applies only while the job runs under ``worker_id``'s lease; otherwise returns None
        and changes nothing (it was reaped, cancelled, or never this worker's). A retry
        with no attempts left, or of class PERMANENT, fails the job with its class and code.
        """
        check_outcome(outcome)
        async with self._db.shared_transaction() as conn:
            job = await self._settle_run(conn, job_id, worker_id, outcome)
        if job is not None:
            await self._announce([job])
        return job

    async def _settle_run(
        self, conn: Connection, job_id: UUID, worker_id: str, outcome: JobOutcome
    ) -> Job | None:
        locked = await self._repo.lock_running(conn, job_id, worker_id)
        if locked is None:
            return None
        if outcome.kind == "success":
            return await self._repo.complete(conn, job_id, dict(outcome.result or {}))
        attempts, max_attempts = locked
        # A hand-built retry without a class is retried as the mildest kind of failure.
        failure_class = outcome.failure_class or FailureClass.TRANSIENT
        if outcome.kind == "failure":
            failure_class, delay = FailureClass.PERMANENT, None
        elif failure_class is FailureClass.PERMANENT or attempts >= max_attempts:
            delay = None
        elif outcome.retry_after_seconds is not None:
            delay = max(outcome.retry_after_seconds, 0.0)
        else:
            delay = self._delay(failure_class, attempts)
        code = outcome.failure_code or ""  # check_outcome made sure there is one
        [job] = await self._repo.settle(conn, [(job_id, delay)], failure_class, code)
        return job

    async def release(self, job_id: UUID, worker_id: str) -> Job | None:
        """Hand a running job back at shutdown: pending now, its attempt not counted
        (``stale_worker``/``worker_shutdown`` record why it ran again). None, changing
        nothing, unless it runs under ``worker_id``'s lease."""
        async with self._db.shared_transaction() as conn:
            job = await self._repo.release(conn, job_id, worker_id)
        if job is not None:
            await self._announce([job])
        return job

    async def reap(self, *, limit: int = 500) -> builtins.list[Job]:
        """Take back up to ``limit`` running jobs whose lease expired: pending again after
        a STALE_WORKER backoff, or failed when no attempts are left; both with code
        ``lease_expired``. Returns the jobs changed. Safe to run on many hosts at once."""
        async with self._db.shared_transaction() as conn:
            expired = await self._repo.lock_expired(conn, max(limit, 0))
            stale = FailureClass.STALE_WORKER
            delays = [
                (job_id, None if attempts >= most else self._delay(stale, attempts))
                for job_id, attempts, most in expired
            ]
            reaped = await self._repo.settle(conn, delays, stale, "lease_expired")
        await self._announce(reaped)
        return reaped

    # -- the relay -------------------------------------------------------------------------

    async def due_for_send(
        self, *, resend_after_seconds: float, limit: int = 500, grace_seconds: float = 1.0
    ) -> builtins.list[Job]:
        """Runnable pending jobs whose message is due: never sent and last written more than
        ``grace_seconds`` ago (so an after-commit send still in flight is not doubled), or
        sent more than ``resend_after_seconds`` ago. Highest priority first."""
        async with self._db.shared_transaction() as conn:
            return await self._repo.due_for_send(
                conn,
                resend_after=float(resend_after_seconds),
                grace=float(grace_seconds),
                limit=max(limit, 0),
            )

    async def mark_sent(self, job_ids: Sequence[UUID]) -> None:
        """Record that a message was sent for these jobs (those still pending)."""
        if job_ids:
            async with self._db.shared_transaction() as conn:
                await self._repo.mark_sent(conn, job_ids)

    # -- reading ---------------------------------------------------------------------------

    async def get(self, job_id: UUID) -> Job | None:
        async with self._db.shared_transaction() as conn:
            return await self._repo.get(conn, job_id)

    async def list(self, filter: JobFilter, *, first: int | None, after: str | None) -> JobPage:
        """A page of jobs, newest first (``created_at DESC, id DESC``). ``first`` defaults to
        20 and is capped at 100; ``after`` is the cursor of the previous page's last item."""
        limit = validate_page_size(first, default=DEFAULT_PAGE_SIZE, most=MAX_PAGE_SIZE)
        position = None if after is None else decode_cursor(after)
        query = validate_filter(filter)
        async with self._db.shared_transaction() as conn:
            jobs = await self._repo.list(
                conn, query, after=through(position), limit=rows_to_fetch(limit, position)
            )
        return keyset_page(jobs, limit=limit, after=position)

    async def stats(self) -> JobStats:
        """Counts by status and pending counts by tier, from one consistent snapshot."""
        async with self._db.shared_transaction() as conn:
            rows = await self._repo.stats(conn)
        by_status = {status.value: 0 for status in JobStatus}
        by_tier = {tier.value: 0 for tier in Tier}
        oldest: datetime | None = None
        for row in rows:
            by_status[row.status.value] += row.count
            if row.status is JobStatus.PENDING:
                by_tier[row.tier.value] += row.count
                oldest = (
                    row.oldest_created_at if oldest is None else min(oldest, row.oldest_created_at)
                )
        return JobStats(by_status=by_status, by_tier_pending=by_tier, oldest_pending_at=oldest)

    async def live(self) -> builtins.list[LiveRow]:
        """Pending and running jobs counted by type, tier and status (for metrics)."""
        async with self._db.shared_transaction() as conn:
            return await self._repo.live(conn)

    # -- the operator's controls -----------------------------------------------------------

    async def cancel(self, job_id: UUID, *, actor: str | None = None) -> Job:
        """Cancel a pending or running job. A running job's worker then finds no lease:
        its heartbeat says stop and its finish changes nothing. Conflict when the job is
        already completed, failed or cancelled; NotFound when there is no such job."""
        async with self._db.shared_transaction() as conn:
            job = await self._repo.cancel(conn, job_id)
            current = job or await self._repo.get(conn, job_id)
        cancelled = self._changed(job, current, job_id, "cancelled", "pending or running")
        await self._announce([cancelled], actor=actor)
        return cancelled

    async def retry(self, job_id: UUID, *, actor: str | None = None) -> Job:
        """Queue a failed or cancelled job again, now, with a fresh count of attempts; its
        failure class and code stay until its next run ends. Conflict in any other state,
        or when another pending job holds its dedupe key."""
        async with self._db.shared_transaction() as conn:
            job = await self._repo.retry(conn, job_id)
            current = job or await self._repo.get(conn, job_id)
        retried = self._changed(job, current, job_id, "retried", "failed or cancelled")
        await self._announce([retried], actor=actor)
        return retried

    async def pause(self, memory: str | None, actor: str | None) -> None:
        """Stop claims of ``memory``'s jobs (of every job when None). Idempotent: pausing
        again keeps the first pause's time and actor. NotFound for an unknown memory."""
        memory = validate_memory(memory)
        async with self._db.shared_transaction() as conn:
            await self._repo.pause(conn, memory, actor)

    async def resume(self, memory: str | None) -> None:
        """Undo :meth:`pause` for ``memory`` (the global pause when None). Idempotent.

        The jobs it releases are marked unsent, so :meth:`due_for_send` offers them again
        at once: their earlier wake-ups were spent while they could not be claimed."""
        memory = validate_memory(memory)
        async with self._db.shared_transaction() as conn:
            await self._repo.resume(conn, memory)

    async def pauses(self) -> builtins.list[JobPause]:
        """The pauses in force, the global one (memory None) first."""
        async with self._db.shared_transaction() as conn:
            return await self._repo.pauses(conn)

    async def announce(self, job: Job, event: Event) -> None:
        """Publish ``event``, which a handler of ``job`` reports (see
        :attr:`HandlerContext.publish`); never raises."""
        if self._events is not None:
            await self._events.announce(job, event)

    async def _announce(
        self, jobs: Sequence[Job], type: str | None = None, *, actor: str | None = None
    ) -> None:
        if self._events is not None and jobs:
            await self._events.publish(jobs, type, actor=actor)

    def _delay(self, failure_class: FailureClass, attempts: int) -> float:
        return self._backoff.delay(failure_class, attempts, rng=self._rng)

    @staticmethod
    def _changed(
        job: Job | None, current: Job | None, job_id: UUID, verb: str, allowed: str
    ) -> Job:
        if job is not None:
            return job
        if current is None:
            raise NotFound(f"Job {job_id} does not exist", job_id=str(job_id))
        raise Conflict(
            f"Job {job_id} is {current.status.value}; only {allowed} jobs can be {verb}",
            job_id=str(job_id),
            status=current.status.value,
        )
