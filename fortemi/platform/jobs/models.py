"""The job record and the contract between the job service, its handlers and the workers.

A job is a row in ``public.job``, written in the same transaction as the change that
caused it. A Dramatiq message carries only a job id and is sent after commit; a relay
re-sends for rows whose message was lost, so PostgreSQL is the only source of truth.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol
from uuid import UUID

from fortemi.platform.events import Event

__all__ = [
    "NEXT_TIER",
    "Escalate",
    "FailureClass",
    "HandlerContext",
    "Job",
    "JobOutcome",
    "JobSpec",
    "JobStatus",
    "JobType",
    "Tier",
]


class Tier(StrEnum):
    CPU = "cpu"
    FAST_GPU = "fast_gpu"
    STANDARD_GPU = "standard_gpu"


# One tier up, for escalation; the standard GPU tier is the top.
NEXT_TIER: dict[Tier, Tier] = {Tier.CPU: Tier.FAST_GPU, Tier.FAST_GPU: Tier.STANDARD_GPU}


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class FailureClass(StrEnum):
    TRANSIENT = "transient"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    STALE_WORKER = "stale_worker"
    PERMANENT = "permanent"


@dataclass(frozen=True, slots=True)
class Job:
    id: UUID
    memory: str | None
    type: str
    tier: Tier
    priority: int  # 1..10, higher first
    status: JobStatus
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    next_attempt_at: datetime
    progress: int  # 0..100
    progress_message: str | None
    failure_class: FailureClass | None
    failure_code: str | None
    result: dict[str, Any] | None
    dedupe_key: str | None
    requested_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job to enqueue. ``tier``/``priority``/``max_attempts`` default from its type."""

    type: str
    memory: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    priority: int | None = None
    tier: Tier | None = None
    max_attempts: int | None = None
    dedupe_key: str | None = None
    requested_by: str | None = None


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What a handler returns: done, failed for good, or try again later."""

    kind: str  # "success" | "failure" | "retry"
    result: dict[str, Any] | None = None
    failure_class: FailureClass | None = None
    failure_code: str | None = None
    retry_after_seconds: float | None = None  # overrides the computed backoff (rate limits)

    @classmethod
    def success(cls, result: Mapping[str, Any] | None = None) -> JobOutcome:
        return cls("success", result=dict(result or {}))

    @classmethod
    def failure(cls, code: str) -> JobOutcome:
        return cls("failure", failure_class=FailureClass.PERMANENT, failure_code=code)

    @classmethod
    def escalated(cls, successor: Job) -> JobOutcome:
        """Done here: ``successor`` (from :meth:`HandlerContext.escalate`) carries on."""
        return cls.success({"escalatedTo": str(successor.id), "tier": successor.tier.value})

    @classmethod
    def retry(
        cls, failure_class: FailureClass, code: str, *, after_seconds: float | None = None
    ) -> JobOutcome:
        return cls(
            "retry",
            failure_class=failure_class,
            failure_code=code,
            retry_after_seconds=after_seconds,
        )


class Escalate(Protocol):
    """``escalate(reason, carry=None)``: see :class:`HandlerContext`."""

    def __call__(
        self, reason: str, /, *, carry: Mapping[str, Any] | None = None
    ) -> Awaitable[Job]: ...


@dataclass
class HandlerContext:
    """What a running handler may do besides its work: report progress (which also
    renews its lease), enqueue follow-up jobs, escalate, and announce what it changed.

    ``publish`` puts a domain event (``note.purged``, ...) on the event bus with the job's
    correlation id, after the change it reports has committed; like every event it is a
    notification, never raised on: a failed publish is logged and the job goes on.

    Escalation is how a handler that got too little from its tier (a small model's
    answer too poor, a context too long) hands the same logical job one tier up, instead
    of falling back inline: ``await context.escalate("low_confidence")`` enqueues a copy
    of the job on the next tier (cpu → fast_gpu → standard_gpu) with
    ``payload["escalation"] = {origin, fromJob, fromTier, reason, path}``, and the handler
    then returns :meth:`JobOutcome.escalated`. Both jobs' events share the origin's
    correlation id. ValueError from the top tier. ``carry`` (JSON) is what the tier hands
    up besides the job's own payload, e.g. what it found so far: it lands in
    ``payload["escalation"]["carried"]`` of the successor.
    """

    job: Job
    report_progress: Callable[[int, str | None], Awaitable[None]]
    enqueue: Callable[[JobSpec], Awaitable[Job]]
    escalate: Escalate
    publish: Callable[[Event], Awaitable[None]]


Handler = Callable[[HandlerContext], Awaitable[JobOutcome]]


@dataclass(frozen=True, slots=True)
class JobType:
    """A registry entry: which tier and priority a job type runs at, and its handler."""

    name: str
    tier: Tier
    priority: int
    handler: Handler
    max_attempts: int = 5
