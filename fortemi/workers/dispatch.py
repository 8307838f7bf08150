"""Sending wake-ups for jobs, after commit.

The order is always: commit the job row, ``mark_sent``, then send its wake-up. Marking
first matters: ``mark_sent`` updates the row, and a worker woken by the message claims
with ``FOR UPDATE SKIP LOCKED``; a message sent before the mark commits can reach a worker
while the mark still holds the row lock, and the claim then skips the very job it was
sent for (measured: about one pickup in 30 waited for the relay, ~35 s). The other order's
cost is smaller and rarer: a send that fails after its mark leaves the job without a
message until the relay's ``resend_after_seconds`` passes.

Redis and Dramatiq errors are translated here, once, into
:class:`~fortemi.platform.errors.Unavailable`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

import dramatiq
import redis

from fortemi.platform.errors import Unavailable
from fortemi.platform.jobs.models import Job, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.workers.broker import wake_actor

__all__ = ["MAX_DELAY", "JobDispatcher", "dispatch"]

log = logging.getLogger(__name__)

# Redis-broker delays must stay under 7 days. A job due later is woken early, finds
# nothing runnable, and is re-woken for the rest of its wait (see JobExecutor).
MAX_DELAY = timedelta(days=1)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class JobDispatcher:
    """Sends ``wake(job.id)`` to a job's tier queue, delayed until the job is due.

    Synchronous (Dramatiq's Redis client is); async code calls :func:`dispatch`, which
    runs it off the event loop. ``clock`` is injectable for tests.
    """

    def __init__(self, broker: dramatiq.Broker, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self._broker = broker
        self._clock = clock

    def delay_ms(self, due: datetime) -> int:
        """Milliseconds from now until ``due``: 0 when due already, at most MAX_DELAY."""
        wait = min(due - self._clock(), MAX_DELAY)
        return max(0, int(wait.total_seconds() * 1000))

    def send(self, job: Job, *, min_delay_ms: int = 0) -> None:
        """Send the job's wake-up. Unavailable if Redis cannot be reached."""
        self.wake(job.tier, job.id, max(self.delay_ms(job.next_attempt_at), min_delay_ms))

    def wake(self, tier: Tier, job_id: UUID, delay_ms: int = 0) -> None:
        """Send ``wake(job_id)`` to ``tier``'s queue after ``delay_ms``."""
        try:
            wake_actor(self._broker, tier).send_with_options(
                args=(str(job_id),), delay=delay_ms or None
            )
        except (redis.RedisError, dramatiq.errors.BrokerError) as exc:
            raise Unavailable(f"Cannot reach the job broker: {type(exc).__name__}") from exc

    def send_many(self, jobs: Sequence[Job]) -> int:
        """Send each job's wake-up; how many were sent (the first failure ends the batch)."""
        for sent, job in enumerate(jobs):
            try:
                self.send(job)
            except Unavailable:
                # The rest would fail the same way; the relay re-sends them later.
                log.warning(
                    "job broker unavailable; %d wake-up(s) left to the relay", len(jobs) - sent
                )
                return sent
        return len(jobs)


async def dispatch(service: JobService, dispatcher: JobDispatcher, jobs: Sequence[Job]) -> int:
    """Mark the pending ones among ``jobs`` (committed already) sent, then wake them.

    Returns how many were sent. Never raises for an unreachable broker: the relay re-sends
    what could not be sent once ``resend_after_seconds`` has passed.
    """
    # Running, finished or cancelled jobs need no wake-up.
    pending = [job for job in jobs if job.status is JobStatus.PENDING]
    if not pending:
        return 0
    await service.mark_sent([job.id for job in pending])
    # Dramatiq's client blocks; keep it off the event loop.
    return await asyncio.to_thread(dispatcher.send_many, pending)
