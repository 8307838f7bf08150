"""What the audit log stores, and the seam through which decisions reach it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

__all__ = ["AuditEntry", "AuditRecord", "AuditSink"]


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One decision, as the enforcement point describes it (before it is chained)."""

    at: datetime  # aware UTC
    user_id: str
    groups: tuple[str, ...]
    resource_type: str
    resource_name: str | None
    memory: str | None
    action: str
    decision: str  # "allow" | "deny"
    reason: str  # a fortemi.auth.decision.Reason value
    policy_version: str
    trace_id: str | None = None
    client_addr: str | None = None
    job_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """A stored row: the record plus its place in a hash chain."""

    id: int
    record: AuditRecord
    segment: str
    seq: int
    prev_hash: str
    chain_hash: str


class AuditSink(Protocol):
    async def record(self, records: Sequence[AuditRecord]) -> None:
        """Durably store ``records`` (in order) or raise ``Unavailable``; never drop one."""
