"""What the audit log stores, the seam through which decisions reach it, and what
auditors get back (filters, pages, buckets, verification results)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from fortemi.platform.pages import Page

__all__ = [
    "AuditBucket",
    "AuditEntry",
    "AuditFilter",
    "AuditPage",
    "AuditRecord",
    "AuditSink",
    "Bucket",
    "GroupBy",
    "Pin",
    "Registration",
    "Verification",
]

Bucket = Literal["hour", "day"]
GroupBy = Literal["user", "resource", "decision", "reason"]


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
    # The X-Request-Id a client sent, if valid; trace_id is always the server's own.
    client_request_id: str | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """A stored row: the record plus its place in a hash chain."""

    id: int
    record: AuditRecord
    segment: str
    seq: int
    prev_hash: str
    chain_hash: str


@dataclass(frozen=True, slots=True, order=True)
class Pin:
    """A segment's head as a later registration (or an exported head) saw it: the row
    ``seq`` of ``segment`` hashed to ``hash`` (``seq`` 0: the segment's genesis)."""

    segment: str
    seq: int
    hash: str


@dataclass(frozen=True, slots=True)
class Registration:
    """A keyed segment's entry in the chained registry (:mod:`.chain` has the format)."""

    ordinal: int
    segment: str
    key_id: str
    started_at: datetime  # aware UTC
    pins: tuple[Pin, ...]
    prev_link: str
    link: str


class AuditSink(Protocol):
    async def record(self, records: Sequence[AuditRecord]) -> None:
        """Durably store ``records`` (in order) or raise ``Unavailable``; never drop one."""


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Which rows an auditor asks about; every field is optional and they combine with AND.

    ``since`` is inclusive and ``until`` exclusive (both on ``at``); ``group`` matches rows
    whose ``groups`` contain it; the rest match their column exactly.
    """

    since: datetime | None = None
    until: datetime | None = None
    user_id: str | None = None
    group: str | None = None
    resource_type: str | None = None
    resource_name: str | None = None
    memory: str | None = None
    action: str | None = None
    decision: str | None = None
    reason: str | None = None


# One page of entries, newest first, each with the opaque cursor of its position.
AuditPage = Page[AuditEntry]


@dataclass(frozen=True, slots=True)
class AuditBucket:
    """The number of rows in one time bucket; the grouped-by columns are set, others None."""

    start: datetime
    count: int
    user_id: str | None = None
    resource_type: str | None = None
    resource_name: str | None = None
    decision: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of re-checking the hash chains.

    ``checked`` rows were re-hashed. When ``ok`` is false, ``problem`` says what is wrong and
    ``first_broken_id`` is the lowest id among the rows found broken (None only when the
    break has no row left to point at, e.g. every row of a segment was deleted).
    """

    ok: bool
    checked: int
    first_broken_id: int | None
    problem: str | None
