"""Job state changes as events on the bus, for ``jobEvents`` subscribers and webhooks.

Every change the job service commits is announced after its commit, whichever process
made it (an API replica enqueueing or cancelling, a worker claiming, reporting progress
or finishing, a reaper taking a job back). Events are notifications, not the record: a
publish that fails is logged and dropped, never allowed to undo or fail the change.

Types, by the state the job is in afterwards: ``job.created``, ``job.started``,
``job.progress``, ``job.retrying`` (pending again: a retry, a reaped lease, an operator's
``retryJob``), ``job.completed``, ``job.failed``, ``job.cancelled``. The correlation id is
the job that started a chain: an escalated job carries its origin's, so one id follows
a logical job up the tiers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fortemi.platform.errors import Unavailable
from fortemi.platform.events import Event, EventBus
from fortemi.platform.ids import to_global_id
from fortemi.platform.jobs.models import Job, JobStatus

__all__ = ["JOB_EVENT_TYPES", "JobEventPublisher", "job_event"]

log = logging.getLogger(__name__)

JOB_EVENT_TYPES = (
    "job.created",
    "job.started",
    "job.progress",
    "job.retrying",
    "job.completed",
    "job.failed",
    "job.cancelled",
)

_BY_STATUS = {
    JobStatus.PENDING: "job.retrying",
    JobStatus.RUNNING: "job.started",
    JobStatus.COMPLETED: "job.completed",
    JobStatus.FAILED: "job.failed",
    JobStatus.CANCELLED: "job.cancelled",
}


def job_event(job: Job, type: str | None = None, *, actor: str | None = None) -> Event:
    """The envelope announcing ``job`` as it is now; ``type`` defaults from its status."""
    escalation = job.payload.get("escalation") if isinstance(job.payload, dict) else None
    origin = escalation.get("origin") if isinstance(escalation, dict) else None
    payload: dict[str, Any] = {
        "jobType": job.type,
        "status": job.status.value,
        "tier": job.tier.value,
        "priority": job.priority,
        "attempts": job.attempts,
        "maxAttempts": job.max_attempts,
        "progress": job.progress,
        "progressMessage": job.progress_message,
        "failureClass": job.failure_class.value if job.failure_class else None,
        "failureCode": job.failure_code,
        "nextAttemptAt": job.next_attempt_at.isoformat(),
        "dedupeKey": job.dedupe_key,
    }
    if isinstance(escalation, dict):
        # What a tier carried up is the handler's working data, derived from the content
        # it works on (a note's concepts): events go to every reader of the memory's jobs.
        payload["escalation"] = {k: v for k, v in escalation.items() if k != "carried"}
    if job.status is JobStatus.COMPLETED and job.result is not None:
        payload["result"] = job.result
    return Event(
        type=type or _BY_STATUS[job.status],
        entity_type="job",
        entity_id=to_global_id("Job", job.id),
        memory=job.memory,
        actor=actor,
        correlation_id=to_global_id("Job", origin if isinstance(origin, str) else job.id),
        payload=payload,
    )


class JobEventPublisher:
    """Announces job changes on an :class:`EventBus`; never raises."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus

    async def publish(
        self, jobs: Sequence[Job], type: str | None = None, *, actor: str | None = None
    ) -> None:
        try:
            if len(jobs) == 1:
                await self._bus.publish(job_event(jobs[0], type, actor=actor))
            else:
                await self._bus.publish_many([job_event(job, type, actor=actor) for job in jobs])
        except Unavailable:
            # A notification, not the record: the job rows have the truth.
            log.warning("%d job event(s) not published: event bus unavailable", len(jobs))

    async def announce(self, job: Job, event: Event) -> None:
        """Publish a domain event a handler of ``job`` reports, under the job's correlation
        id (its origin's, for an escalated job), so it reads as part of the same chain."""
        correlation_id = job_event(job).correlation_id
        try:
            await self._bus.publish(replace(event, correlation_id=correlation_id))
        except Unavailable:
            log.warning(
                "event %s from job %s not published: event bus unavailable", event.type, job.id
            )
