"""Checks on what callers hand the job service, made before any SQL runs.

A job spec or list filter can come from a client (GraphQL), so its faults are
BadUserInput with the field named. A handler's outcome comes from our own code, so its
faults are ValueError: a bug to fix, not input to reject politely.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from fortemi.platform.database import validate_memory_name
from fortemi.platform.errors import BadUserInput
from fortemi.platform.jobs.models import JobOutcome, JobSpec, JobStatus, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.repository import JobInsert, ListQuery
from fortemi.platform.times import optional_aware

if TYPE_CHECKING:
    from fortemi.platform.jobs.service import JobFilter

__all__ = [
    "check_outcome",
    "validate_filter",
    "validate_memory",
    "validate_page_size",
    "validate_spec",
]

_MAX_ATTEMPTS = 2**31 - 1  # an integer column
_MAX_DEDUPE_KEY = 400  # the column's CHECK


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_object(value: object, field: str) -> dict[str, Any]:
    """``value`` as a dict that PostgreSQL's jsonb accepts (no NaN or infinities)."""
    if not isinstance(value, Mapping):
        raise BadUserInput(f"{field} must be a JSON object", field=field)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise BadUserInput(f"{field} must be JSON: {exc}", field=field) from exc
    return dict(value)


def validate_memory(memory: str | None) -> str | None:
    return None if memory is None else validate_memory_name(memory)


def validate_spec(spec: JobSpec, registry: JobRegistry, job_id: UUID) -> JobInsert:
    """The row to insert for ``spec``, its type's defaults filled in."""
    if not isinstance(spec.type, str) or spec.type not in registry:
        raise BadUserInput(
            f"Unknown job type {spec.type!r}; known types: {', '.join(registry.names())}",
            field="type",
        )
    job_type = registry.get(spec.type)
    priority = job_type.priority if spec.priority is None else spec.priority
    if not _is_int(priority) or not 1 <= priority <= 10:
        raise BadUserInput("priority must be an integer from 1 to 10", field="priority")
    try:
        tier = job_type.tier if spec.tier is None else Tier(spec.tier)
    except ValueError:
        tiers = ", ".join(tier.value for tier in Tier)
        raise BadUserInput(f"tier must be one of {tiers}", field="tier") from None
    max_attempts = job_type.max_attempts if spec.max_attempts is None else spec.max_attempts
    if not _is_int(max_attempts) or not 1 <= max_attempts <= _MAX_ATTEMPTS:
        raise BadUserInput("max_attempts must be a positive integer", field="max_attempts")
    key = spec.dedupe_key
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= _MAX_DEDUPE_KEY):
        raise BadUserInput(
            f"dedupe_key must be 1 to {_MAX_DEDUPE_KEY} characters", field="dedupe_key"
        )
    if spec.requested_by is not None and not isinstance(spec.requested_by, str):
        raise BadUserInput("requested_by must be text", field="requested_by")
    return JobInsert(
        id=job_id,
        memory=validate_memory(spec.memory),
        type=spec.type,
        tier=tier,
        priority=priority,
        payload=_json_object(spec.payload, "payload"),
        max_attempts=max_attempts,
        dedupe_key=key,
        requested_by=spec.requested_by,
    )


def validate_filter(job_filter: JobFilter) -> ListQuery:
    f = job_filter
    try:
        status = None if f.status is None else JobStatus(f.status).value
    except ValueError:
        raise BadUserInput(f"status {f.status!r} is not a job status", field="status") from None
    try:
        tier = None if f.tier is None else Tier(f.tier).value
    except ValueError:
        raise BadUserInput(f"tier {f.tier!r} is not a tier", field="tier") from None
    return ListQuery(
        status=status,
        type=f.type,
        tier=tier,
        # An unknown memory simply matches nothing; a malformed name is the caller's error.
        memory=validate_memory(f.memory),
        created_after=optional_aware(f.created_after, "created_after"),
        created_before=optional_aware(f.created_before, "created_before"),
    )


def validate_page_size(first: int | None, *, default: int, most: int) -> int:
    if first is None:
        return default
    if not _is_int(first) or first < 0:
        raise BadUserInput("first must be zero or a positive integer", field="first")
    return min(first, most)


def check_outcome(outcome: JobOutcome) -> None:
    """ValueError unless ``outcome`` is a well-formed success, failure or retry."""
    if outcome.kind == "success":
        if outcome.result is not None:
            try:
                _json_object(outcome.result, "result")
            except BadUserInput as exc:
                raise ValueError(f"a job's result must be a JSON object: {exc.message}") from exc
        return
    if outcome.kind not in ("failure", "retry"):
        raise ValueError(f"a job outcome is success, failure or retry, not {outcome.kind!r}")
    if not isinstance(outcome.failure_code, str) or not outcome.failure_code:
        raise ValueError("a failure or retry outcome needs a failure_code")
    after = outcome.retry_after_seconds
    if after is not None and not math.isfinite(after):
        raise ValueError(f"retry_after_seconds must be finite, not {after}")
