"""The single entry point every resolver uses to ask "may this principal do this?".

Until the policy engine lands, :class:`InterimAccessPolicy` applies the foundation's rule:
creating, deleting or re-defaulting memories (``system`` resources) needs the ``admin``
role; reading and writing inside a memory needs any authenticated principal. The decision
engine replaces this class behind the same :class:`AccessPolicy` protocol, so resolvers do
not change when it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from fortemi.auth.principal import Principal
from fortemi.platform.errors import Forbidden

__all__ = ["ADMIN_ROLE", "AccessPolicy", "Action", "InterimAccessPolicy", "Resource"]

ADMIN_ROLE = "admin"


class Action(StrEnum):
    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Resource:
    type: str  # "system" | "memory" | "note" | later "project", "skill", "audit"
    name: str | None = None
    memory: str | None = None

    @classmethod
    def system(cls) -> Resource:
        return cls("system")

    @classmethod
    def in_memory(cls, memory: str) -> Resource:
        return cls("memory", memory, memory)


class AccessPolicy(Protocol):
    async def check(self, principal: Principal, action: Action, resource: Resource) -> None:
        """Return if allowed; raise :class:`Forbidden` (with a stable ``reason``) if not."""


class InterimAccessPolicy:
    async def check(self, principal: Principal, action: Action, resource: Resource) -> None:
        if resource.type == "system" and not principal.has_role(ADMIN_ROLE):
            raise Forbidden(
                f"This operation needs the {ADMIN_ROLE!r} role", reason="role_requirement_failed"
            )
