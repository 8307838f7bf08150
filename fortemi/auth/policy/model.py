"""What a parsed access policy is: plain frozen values, built only by the validator.

A :class:`Policy` governs one resource (a project, a shared skill, a memory, or the system
and audit resources of ``default.yaml``). Its list fields are frozensets, so the order in
which a file lists groups, subjects, roles or permissions can never change a decision,
and its ``version`` is a blake3 hash over a canonical rendering of its content (sorted
keys, sorted lists, defaults filled in), so two spellings of the same rules hash alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import blake3

from fortemi.auth.decision import Action, ResourceType

__all__ = [
    "DEFAULT_ROLES",
    "AccessLevel",
    "ActionOverride",
    "DefaultDecision",
    "Defaults",
    "Policy",
    "PolicyError",
    "PolicyInfo",
    "PolicyRef",
    "content_hash",
]

# The role order used when default.yaml does not name one (or is missing), lowest first.
DEFAULT_ROLES: tuple[str, ...] = ("viewer", "editor", "admin")


class AccessLevel(StrEnum):
    PRIVATE = "private"
    GROUP = "group"
    PUBLIC = "public"


class DefaultDecision(StrEnum):
    DENY = "deny"
    ALLOW = "allow"


def content_hash(content: object) -> str:
    """The blake3 hex digest of ``content`` rendered as canonical JSON (sorted keys)."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return blake3.blake3(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PolicyError:
    """One problem in one policy source, located as precisely as the source allows."""

    file: str  # a path as given ("policies/projects/x/_access.yaml") or "database:..."
    line: int | None  # 1-based; None where the source has no lines (database documents)
    field: str | None  # dotted path: "access_level", "deny.groups[2]", "actions.write"
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        what = self.message if self.field is None else f"{self.field}: {self.message}"
        return f"{where}: {what}"


@dataclass(frozen=True, slots=True)
class ActionOverride:
    """A per-action override. ``sets_role``/``sets_permission`` say whether the document
    named the key at all: a key given as null removes the requirement for that action,
    an absent key inherits the policy-wide one."""

    required_role: str | None = None
    required_permission: str | None = None
    sets_role: bool = False
    sets_permission: bool = False


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules for one resource. ``memory`` None means "in every memory".

    Compare policies by ``version`` (content) and ``source`` (where they came from).
    """

    resource_type: ResourceType
    name: str | None  # None only for the system and audit resources
    memory: str | None
    source: str  # "file:projects/poimen/_access.yaml", "file:default.yaml", "database"
    owner_group: str | None
    access_level: AccessLevel
    allowed_groups: frozenset[str] = frozenset()
    required_role: str | None = None
    required_permission: str | None = None
    actions: Mapping[Action, ActionOverride] = field(default_factory=dict, hash=False)
    deny_groups: frozenset[str] = frozenset()
    deny_subjects: frozenset[str] = frozenset()
    grant_groups: frozenset[str] = frozenset()
    grant_subjects: frozenset[str] = frozenset()
    grant_roles: frozenset[str] = frozenset()
    grant_permissions: frozenset[str] = frozenset()
    version: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.version:
            object.__setattr__(self, "version", content_hash(self.canonical()))

    @property
    def has_deny_rules(self) -> bool:
        return bool(self.deny_groups or self.deny_subjects)

    def states(self, action: Action) -> bool:
        """Whether the policy has rules for ``action`` at all.

        The policy-wide fields are the rules for ``read``; any other action is allowed
        only where ``actions`` names it (an entry may be empty: "as for read"). A policy
        that never mentions ``write``, ``delete`` or ``admin`` allows them to no one but
        its explicit grants, so a read requirement can never stand in for a write one.
        """
        return action is Action.READ or action in self.actions

    def role_for(self, action: Action) -> str | None:
        """The role ``action`` requires, for an action the policy :meth:`states`: the
        action's override if it names one, else the policy-wide ``required_role``."""
        override = self.actions.get(action)
        if override is not None and override.sets_role:
            return override.required_role
        return self.required_role

    def permission_for(self, action: Action) -> str | None:
        """The permission ``action`` requires, resolved like :meth:`role_for`."""
        override = self.actions.get(action)
        if override is not None and override.sets_permission:
            return override.required_permission
        return self.required_permission

    def canonical(self) -> dict[str, Any]:
        """The content as plain JSON data, independent of spelling and list order."""
        actions: dict[str, dict[str, str | None]] = {}
        for action, override in self.actions.items():
            rendered: dict[str, str | None] = {}
            if override.sets_role:
                rendered["required_role"] = override.required_role
            if override.sets_permission:
                rendered["required_permission"] = override.required_permission
            actions[action.value] = rendered
        return {
            "resource": [self.resource_type.value, self.memory, self.name],
            "owner_group": self.owner_group,
            "access_level": self.access_level.value,
            "allowed_groups": sorted(self.allowed_groups),
            "required_role": self.required_role,
            "required_permission": self.required_permission,
            "actions": actions,
            "deny": {"groups": sorted(self.deny_groups), "subjects": sorted(self.deny_subjects)},
            "grant": {
                "groups": sorted(self.grant_groups),
                "subjects": sorted(self.grant_subjects),
                "roles": sorted(self.grant_roles),
                "permissions": sorted(self.grant_permissions),
            },
        }


@dataclass(frozen=True, slots=True)
class Defaults:
    """What ``default.yaml`` says: the no-policy decision, the role order, and the
    policies of the system and audit resources (None: decided by ``decision``)."""

    decision: DefaultDecision
    role_order: tuple[str, ...]
    system: Policy | None
    audit: Policy | None
    source: str | None  # "file:default.yaml", or None when there was none

    @classmethod
    def missing(cls) -> Defaults:
        """Fail closed: deny whatever has no policy, and no system or audit policy."""
        return cls(DefaultDecision.DENY, DEFAULT_ROLES, None, None, None)

    def canonical(self) -> dict[str, Any]:
        return {
            "default": self.decision.value,
            "roles": list(self.role_order),  # order matters here: it ranks the roles
            "system": None if self.system is None else self.system.canonical(),
            "audit": None if self.audit is None else self.audit.canonical(),
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class PolicyRef:
    """A policy that lost to another one (see :attr:`PolicyInfo.overrides`)."""

    source: str
    memory: str | None
    version: str


@dataclass(frozen=True, slots=True)
class PolicyInfo:
    """One policy in force, as the ``policies`` query lists it."""

    resource_type: ResourceType
    name: str | None
    memory: str | None  # None: applies in every memory
    source: str
    version: str
    overrides: tuple[PolicyRef, ...] = ()  # same resource, lower precedence, not in force
