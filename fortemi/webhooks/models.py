"""Webhooks, their deliveries and attempts; which events a webhook wants; the body sent."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from fortemi.platform.errors import BadUserInput
from fortemi.platform.events import Event

__all__ = [
    "EVENT_FAMILIES",
    "Attempt",
    "Delivery",
    "Webhook",
    "event_body",
    "validate_event_types",
]

# The event families a webhook can ask for; "note.*" and "job.*", or exact types in them.
EVENT_FAMILIES = ("note", "job")
_TYPE = re.compile(r"\*|(?P<family>[a-z]+)\.(?:\*|[a-z][a-z_]{0,40})")
MAX_EVENT_TYPES = 50


@dataclass(frozen=True, slots=True)
class Webhook:
    id: UUID
    memory: str
    url: str
    event_types: tuple[str, ...]
    description: str | None
    created_by: str
    created_at: datetime

    def wants(self, event_type: str) -> bool:
        family = event_type.partition(".")[0]
        return any(
            pattern in ("*", event_type) or pattern == f"{family}.*" for pattern in self.event_types
        )


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event for one webhook: ``pending`` until delivered or failed for good."""

    id: UUID
    webhook_id: UUID
    event_id: str
    event_type: str
    job_id: UUID | None
    status: str  # pending | delivered | failed
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One POST of a delivery (redirects followed within it)."""

    attempt: int
    at: datetime
    outcome: str  # delivered | retry | failed
    status_code: int | None
    failure_class: str | None
    code: str | None
    duration_ms: float
    response_excerpt: str


def validate_event_types(event_types: Sequence[str]) -> tuple[str, ...]:
    """The patterns, deduplicated in order; BadUserInput naming the first bad one."""
    if not event_types or len(event_types) > MAX_EVENT_TYPES:
        raise BadUserInput(
            f"Give 1 to {MAX_EVENT_TYPES} event types, e.g. ['note.*'] or ['job.failed']",
            field="eventTypes",
        )
    for pattern in event_types:
        match = _TYPE.fullmatch(pattern) if isinstance(pattern, str) else None
        family = match["family"] if match else None
        if match is None or (family is not None and family not in EVENT_FAMILIES):
            raise BadUserInput(
                f"{str(pattern)[:60]!r} is not an event type: use '*', a family "
                f"({', '.join(f + '.*' for f in EVENT_FAMILIES)}) or an exact type "
                "such as 'note.created'",
                field="eventTypes",
            )
    return tuple(dict.fromkeys(event_types))


def event_body(event: Event) -> bytes:
    """The JSON a webhook receives: the event envelope, with the GraphQL field names."""
    return json.dumps(
        {
            "id": event.id,
            "type": event.type,
            "at": event.at.isoformat(),
            "memory": event.memory,
            "actor": event.actor,
            "entityType": event.entity_type,
            "entityId": event.entity_id,
            "correlationId": event.correlation_id,
            "payload": dict(event.payload),
            "version": event.version,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
