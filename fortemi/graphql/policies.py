"""Access policies as operators see them: what is loaded, from where, and what failed.

Policies set here are stored in PostgreSQL; a policy file for the same resource still
wins (operators pin policy in version control), and ``policies`` says which won.
Every operation here is a ``system`` decision (admin in the shipped policy).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import strawberry
from strawberry.scalars import JSON

from fortemi.auth.decision import Action, Resource, ResourceType
from fortemi.auth.policy import PolicySet
from fortemi.graphql.context import Info
from fortemi.platform.errors import BadUserInput

__all__ = ["PolicyMutation", "PolicyQuery"]


@strawberry.enum(description="Resources a stored policy can govern")
class PolicyResourceType(Enum):
    MEMORY = "memory"
    PROJECT = "project"
    SKILL = "skill"


@strawberry.type(description="A policy that lost to a higher-precedence one")
class OverriddenPolicy:
    source: str
    memory: str | None
    version: str


@strawberry.type(description="One policy in force")
class PolicyInfo:
    resource_type: str
    name: str | None
    memory: str | None = strawberry.field(description="null: applies in every memory")
    source: str = strawberry.field(description='"file:<path>" or "database"')
    version: str = strawberry.field(description="hash of this policy's content")
    overrides: list[OverriddenPolicy]


@strawberry.type(description="A policy source that failed to load (the last good set holds)")
class PolicyProblem:
    file: str
    line: int | None
    field: str | None
    message: str


@strawberry.type(description="The policy set in force")
class PolicyStatus:
    version: str
    default_decision: str
    roles: list[str]
    policies: list[PolicyInfo]
    errors: list[PolicyProblem]


def _status(policies: PolicySet) -> PolicyStatus:
    return PolicyStatus(
        version=policies.version,
        default_decision=str(policies.defaults.decision.value),
        roles=list(policies.defaults.role_order),
        policies=[
            PolicyInfo(
                resource_type=info.resource_type.value,
                name=info.name,
                memory=info.memory,
                source=info.source,
                version=info.version,
                overrides=[
                    OverriddenPolicy(source=o.source, memory=o.memory, version=o.version)
                    for o in info.overrides
                ],
            )
            for info in policies.infos()
        ],
        errors=[
            PolicyProblem(file=e.file, line=e.line, field=e.field, message=e.message)
            for e in policies.errors
        ],
    )


@strawberry.input(description="A policy to store for a memory, project or skill")
class SetPolicyInput:
    resource_type: PolicyResourceType
    name: str
    memory: str | None = strawberry.field(
        default=None, description="The memory a project policy applies in (skills: null)"
    )
    document: JSON = strawberry.field(description="The policy, in the YAML format's shape")


def _document(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadUserInput("document must be a JSON object in the policy format", field="document")
    return value


@strawberry.type
class PolicyQuery:
    @strawberry.field(description="What policies are loaded, from where, and what failed")
    async def policies(self, info: Info) -> PolicyStatus:
        await info.context.authorize(Action.READ, Resource.system())
        return _status(await info.context.services.policies.snapshot())


@strawberry.type
class PolicyMutation:
    @strawberry.mutation(description="Re-read policy files and stored policies everywhere")
    async def reload_policies(self, info: Info) -> PolicyStatus:
        await info.context.authorize(Action.ADMIN, Resource.system())
        return _status(await info.context.services.policies.invalidate())

    @strawberry.mutation(description="Store a policy (a policy file for it still wins)")
    async def set_policy(self, info: Info, input: SetPolicyInput) -> PolicyStatus:
        await info.context.authorize(Action.ADMIN, Resource.system())
        kind = ResourceType(input.resource_type.value)
        memory = input.name if kind is ResourceType.MEMORY else input.memory
        policies = await info.context.services.policies.put(
            kind, memory, input.name, _document(input.document), actor=info.context.caller.sub
        )
        return _status(policies)

    @strawberry.mutation(description="Remove a stored policy; its resource falls back")
    async def delete_policy(
        self,
        info: Info,
        resource_type: PolicyResourceType,
        name: str,
        memory: str | None = None,
    ) -> bool:
        await info.context.authorize(Action.ADMIN, Resource.system())
        kind = ResourceType(resource_type.value)
        return await info.context.services.policies.delete(
            kind, name if kind is ResourceType.MEMORY else memory, name
        )
