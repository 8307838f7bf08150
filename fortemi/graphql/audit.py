"""The audit log for auditors: entries, aggregates, chain verification, a live feed.

Reading any of it is a decision on the ``audit`` resource (auditors: role ``auditor`` or
permission ``audit:read`` in the shipped policy; ``admin`` alone is not enough), and that
decision is itself recorded, so querying the audit log is audited. The live feed decides
again whenever the policies in force or the subscriber's token changed, and ends with
FORBIDDEN for a subscriber who is no longer an auditor.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry
from strawberry.scalars import JSON

from fortemi.auth import audit as log
from fortemi.auth.audit.export import to_row
from fortemi.auth.decision import Action, Resource
from fortemi.graphql.context import Info
from fortemi.graphql.pagination import Connection, Edge, PageInfo
from fortemi.graphql.reauthorization import Reauthorized
from fortemi.graphql.subscriptions import until_token_expires
from fortemi.platform.times import assume_utc

__all__ = ["AuditQuery", "AuditSubscription"]


@strawberry.enum(description="Width of an auditStats time bucket (UTC)")
class AuditBucketSize(Enum):
    HOUR = "hour"
    DAY = "day"


@strawberry.enum(description="What auditStats counts by, besides time")
class AuditGroupBy(Enum):
    USER = "user"
    RESOURCE = "resource"
    DECISION = "decision"
    REASON = "reason"


@strawberry.input
class AuditFilter:
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

    def to_model(self) -> log.AuditFilter:
        return log.AuditFilter(**{name: getattr(self, name) for name in _FILTER_FIELDS})

    def matches(self, row: dict[str, Any]) -> bool:
        """The same filter over an exported row (for the live feed)."""
        at = datetime.fromisoformat(row["at"])
        if (self.since and at < assume_utc(self.since)) or (
            self.until and at >= assume_utc(self.until)
        ):
            return False
        if self.group is not None and self.group not in row["groups"]:
            return False
        return all(
            getattr(self, name) is None or getattr(self, name) == row[name]
            for name in _EXACT_FIELDS
        )


_FILTER_FIELDS = tuple(AuditFilter.__annotations__)
_EXACT_FIELDS = tuple(name for name in _FILTER_FIELDS if name not in ("since", "until", "group"))


@strawberry.type(description="One recorded authorization decision and its place in the chain")
class AuditEntry:
    id: strawberry.ID
    at: datetime
    user_id: str
    groups: list[str]
    resource_type: str
    resource_name: str | None
    memory: str | None
    action: str
    decision: str
    reason: str
    policy_version: str
    trace_id: str | None = strawberry.field(description="The server's id of the request")
    client_request_id: str | None = strawberry.field(
        description="The X-Request-Id the client sent, if any (as sent; not the trace id)"
    )
    client_addr: str | None
    job_id: str | None
    details: JSON
    segment: str
    seq: int
    prev_hash: str
    chain_hash: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AuditEntry:
        return cls(
            **{**row, "id": strawberry.ID(str(row["id"])), "at": datetime.fromisoformat(row["at"])}
        )

    @classmethod
    def from_model(cls, entry: log.AuditEntry) -> AuditEntry:
        return cls.from_row(to_row(entry))


@strawberry.type
class AuditEdge(Edge[AuditEntry]):
    pass


@strawberry.type
class AuditEntryConnection(Connection[AuditEdge]):
    pass


@strawberry.type
class AuditBucket:
    start: datetime
    count: int
    user_id: str | None
    resource_type: str | None
    resource_name: str | None
    decision: str | None
    reason: str | None


@strawberry.type
class AuditVerification:
    ok: bool
    checked: int
    first_broken_id: strawberry.ID | None
    problem: str | None


async def _as_auditor(info: Info) -> None:
    await info.context.authorize(Action.READ, Resource.audit())


async def _still_auditor(info: Info) -> bool:
    await _as_auditor(info)
    return True


@strawberry.type
class AuditQuery:
    @strawberry.field(description="Recorded decisions, newest first (auditors)")
    async def audit_log(
        self,
        info: Info,
        filter: AuditFilter | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> AuditEntryConnection:
        await _as_auditor(info)
        page = await info.context.services.audit.page(
            filter.to_model() if filter else None, first=first, after=after
        )
        return AuditEntryConnection(
            edges=[AuditEdge(cursor=c, node=AuditEntry.from_model(e)) for c, e in page.items],
            page_info=PageInfo.of(page),
        )

    @strawberry.field(description="Decision counts per time bucket and grouping (auditors)")
    async def audit_stats(
        self,
        info: Info,
        filter: AuditFilter | None = None,
        bucket: AuditBucketSize = AuditBucketSize.DAY,
        group_by: list[AuditGroupBy] | None = None,
    ) -> list[AuditBucket]:
        await _as_auditor(info)
        buckets = await info.context.services.audit.stats(
            filter.to_model() if filter else None,
            bucket=bucket.value,
            group_by=[g.value for g in group_by or ()],
        )
        return [
            AuditBucket(
                start=b.start,
                count=b.count,
                user_id=b.user_id,
                resource_type=b.resource_type,
                resource_name=b.resource_name,
                decision=b.decision,
                reason=b.reason,
            )
            for b in buckets
        ]

    @strawberry.field(description="Re-check every hash chain; the first broken row if any")
    async def audit_verify(self, info: Info, since: datetime | None = None) -> AuditVerification:
        await _as_auditor(info)
        result = await info.context.services.audit.verify(since=since)
        return AuditVerification(
            ok=result.ok,
            checked=result.checked,
            first_broken_id=(
                strawberry.ID(str(result.first_broken_id))
                if result.first_broken_id is not None
                else None
            ),
            problem=result.problem,
        )


@strawberry.type
class AuditSubscription:
    @strawberry.subscription(description="Decisions as they are recorded (auditors)")
    async def audit_events(
        self, info: Info, filter: AuditFilter | None = None
    ) -> AsyncGenerator[AuditEntry, None]:
        access = Reauthorized(info, lambda: _still_auditor(info))
        await access.current()
        wanted = filter or AuditFilter()
        source = info.context.services.audit.subscribe()
        try:
            async for _, row in access.watch(until_token_expires(info, source)):
                if wanted.matches(row):
                    yield AuditEntry.from_row(row)
        finally:
            await source.aclose()
