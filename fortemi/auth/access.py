"""The single entry point every resolver and job uses to ask "may this principal do this?".

:class:`Authorizer` takes the policy set in force, lets the decision engine decide, and
records every decision (allow and deny) in the audit log *before* the caller acts on it:
if the decision cannot be recorded, the operation is refused (fail closed). A read-only
operation may read while its read scope is being recorded
(:meth:`Authorizer.read_scope_recording`), but nothing it read leaves the process before
the record is committed. Nothing else in the code base calls the engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fortemi.auth.audit.models import AuditRecord, AuditSink
from fortemi.auth.decision import Action, Decision, Reason, Resource
from fortemi.auth.policy import AccessDecisionEngine, PolicyProvider, ReadScope
from fortemi.auth.principal import Principal
from fortemi.platform.errors import Forbidden

__all__ = ["Authorizer", "RequestTrace"]


@dataclass(frozen=True, slots=True)
class RequestTrace:
    """Where a decision was asked from: recorded with it."""

    trace_id: str | None = None  # the server's request id, never one a client chose
    client_addr: str | None = None
    job_id: str | None = None
    client_request_id: str | None = None  # the client's X-Request-Id, kept apart
    # What the caller invoked when it is not a GraphQL field (an MCP tool: "mcp:<tool>"),
    # recorded in the decision's details so auditors see which tool acted.
    operation: str | None = None


def _now() -> datetime:
    return datetime.now(UTC)


class Authorizer:
    def __init__(
        self,
        engine: AccessDecisionEngine,
        policies: PolicyProvider,
        audit: AuditSink,
        *,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._engine = engine
        self._policies = policies
        self._audit = audit
        self._clock = clock

    async def decide_all(
        self,
        principal: Principal,
        asks: Sequence[tuple[Action, Resource]],
        trace: RequestTrace,
        *,
        importing: bool = False,
    ) -> list[Decision]:
        """Decide each ask under one policy snapshot; record them all in one audit write.
        ``importing``: the asks are a vault sync's (see
        :meth:`AccessDecisionEngine.decide_import`)."""
        policies = await self._policies.snapshot()
        decide = self._engine.decide_import if importing else self._engine.decide
        decisions = [decide(policies, principal, action, resource) for action, resource in asks]
        at = self._clock()
        await self._audit.record([self._record(principal, d, trace, at) for d in decisions])
        return decisions

    async def decide(
        self, principal: Principal, action: Action, resource: Resource, trace: RequestTrace
    ) -> Decision:
        """The recorded decision; the caller chooses how to answer a deny."""
        (decision,) = await self.decide_all(principal, [(action, resource)], trace)
        return decision

    async def check(
        self, principal: Principal, action: Action, resource: Resource, trace: RequestTrace
    ) -> Decision:
        """The recorded decision, or :class:`Forbidden` carrying its reason code."""
        decision = await self.decide(principal, action, resource, trace)
        if not decision.allowed:
            raise forbidden(decision)
        return decision

    async def deny_missing(
        self, principal: Principal, action: Action, resource: Resource, trace: RequestTrace
    ) -> Decision:
        """Record a deny (reason ``not_found``) for ``action`` on a resource that does not
        exist: the engine is not asked, since a policy may name what does not exist."""
        policies = await self._policies.snapshot()
        decision = Decision(False, Reason.NOT_FOUND, action, resource, None, policies.version)
        await self._audit.record([self._record(principal, decision, trace, self._clock())])
        return decision

    async def read_scope(
        self,
        principal: Principal,
        memory: str,
        trace: RequestTrace,
        *,
        checks: Sequence[tuple[Action, Resource]] = (),
    ) -> ReadScope:
        """What ``principal`` may read in ``memory``, for a list's SQL predicate.

        Recorded as one ``read_scope`` row (not one per policy evaluated), with the
        readable projects and skills in its details. ``checks`` are decided first under
        the same policy snapshot and recorded in the same audit write (one commit, not
        one per question); if one is denied, only they are recorded and it raises
        :class:`Forbidden`, as :meth:`check` would.
        """
        scope, records = await self._scope(principal, memory, trace, checks)
        await self._audit.record(records)
        return scope

    async def read_scope_recording(
        self,
        principal: Principal,
        memory: str,
        trace: RequestTrace,
        *,
        checks: Sequence[tuple[Action, Resource]] = (),
    ) -> tuple[ReadScope, asyncio.Task[None]]:
        """:meth:`read_scope` with its audit write left in flight: the scope, and the task
        that records it.

        For a read-only operation whose reads may overlap the audit commit: the caller
        reads meanwhile, and awaits the task before anything it read leaves the process
        (the task raises ``Unavailable`` when the decision could not be recorded: fail
        closed, as ever). Nothing is changed before the decision is recorded, no record is
        dropped (the writer commits it whatever the caller does), and a deny is recorded
        before :class:`Forbidden` is raised, as :meth:`read_scope` does.
        """
        scope, records = await self._scope(principal, memory, trace, checks)
        return scope, asyncio.create_task(self._audit.record(records))

    async def _scope(
        self,
        principal: Principal,
        memory: str,
        trace: RequestTrace,
        checks: Sequence[tuple[Action, Resource]],
    ) -> tuple[ReadScope, list[AuditRecord]]:
        """The scope and the records to write for it; a denied check is recorded and
        raised here."""
        policies = await self._policies.snapshot()
        decisions = [
            self._engine.decide(policies, principal, action, resource)
            for action, resource in checks
        ]
        at = self._clock()
        checked = [self._record(principal, d, trace, at) for d in decisions]
        denied = next((d for d in decisions if not d.allowed), None)
        if denied is not None:
            await self._audit.record(checked)
            raise forbidden(denied)
        scope = self._engine.read_scope(policies, principal, memory)
        record = AuditRecord(
            at=self._clock(),
            user_id=principal.sub,
            groups=tuple(sorted(principal.groups)),
            resource_type="memory",
            resource_name=memory,
            memory=memory,
            action=Action.READ.value,
            decision="allow",
            reason=Reason.READ_SCOPE.value,
            policy_version=policies.version,
            trace_id=trace.trace_id,
            client_addr=trace.client_addr,
            job_id=trace.job_id,
            client_request_id=trace.client_request_id,
            details={
                **_operation(trace),
                "memory_notes": scope.memory,
                "projects": sorted(scope.projects.names),
                "projects_listed_are_readable": scope.projects.listed_are_readable,
                "skills": sorted(scope.skills.names),
                "skills_listed_are_readable": scope.skills.listed_are_readable,
            },
        )
        return scope, [*checked, record]

    @staticmethod
    def _record(
        principal: Principal, decision: Decision, trace: RequestTrace, at: datetime
    ) -> AuditRecord:
        resource = decision.resource
        return AuditRecord(
            at=at,
            user_id=principal.sub,
            groups=tuple(sorted(principal.groups)),
            resource_type=resource.type.value,
            resource_name=resource.name,
            memory=resource.memory,
            action=decision.action.value,
            decision="allow" if decision.allowed else "deny",
            reason=decision.reason.value,
            policy_version=decision.policy_version,
            trace_id=trace.trace_id,
            client_addr=trace.client_addr,
            job_id=trace.job_id,
            client_request_id=trace.client_request_id,
            details={
                **_operation(trace),
                **({"policy_source": decision.policy_source} if decision.policy_source else {}),
            },
        )


def _operation(trace: RequestTrace) -> dict[str, str]:
    return {"operation": trace.operation} if trace.operation else {}


def forbidden(decision: Decision) -> Forbidden:
    resource = decision.resource
    what = resource.type.value if resource.name is None else f"{resource.type} {resource.name!r}"
    return Forbidden(
        f"You may not {decision.action} {what} ({decision.reason})",
        reason=decision.reason.value,
    )
