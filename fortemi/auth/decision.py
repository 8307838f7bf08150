"""The vocabulary of authorization: actions, resources, reason codes, decisions.

Shared by the policy engine (which makes decisions), the audit log (which records them)
and the resolvers (which ask for them). Reason codes are part of the public API: they
appear in ``extensions.reason`` of FORBIDDEN errors and in every audit row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Action", "Decision", "Reason", "Resource", "ResourceType"]


class Action(StrEnum):
    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    ADMIN = "admin"


class ResourceType(StrEnum):
    SYSTEM = "system"  # creating/deleting memories, reloading and setting policies
    MEMORY = "memory"  # a memory, and its notes that belong to no project or skill
    PROJECT = "project"  # a project inside a memory, and its notes
    SKILL = "skill"  # a shared skill (SKILL-*), and its notes
    AUDIT = "audit"  # the audit log


@dataclass(frozen=True, slots=True)
class Resource:
    """What a decision is about. ``memory`` is None for system and audit; a project or skill
    with a memory is *inside* it, and only reachable through that memory's admission."""

    type: ResourceType
    name: str | None = None
    memory: str | None = None

    @classmethod
    def system(cls) -> Resource:
        return cls(ResourceType.SYSTEM)

    @classmethod
    def audit(cls) -> Resource:
        return cls(ResourceType.AUDIT)

    @classmethod
    def of_memory(cls, memory: str) -> Resource:
        return cls(ResourceType.MEMORY, memory, memory)

    @classmethod
    def of_note(cls, memory: str, project: str | None, skill: str | None) -> Resource:
        """A note is governed by its skill's policy, else its project's, else its memory's."""
        if skill is not None:
            return cls(ResourceType.SKILL, skill, memory)
        if project is not None:
            return cls(ResourceType.PROJECT, project, memory)
        return cls.of_memory(memory)


class Reason(StrEnum):
    # allow
    ACCESS_LEVEL_PUBLIC = "access_level_public"
    IN_ALLOWED_GROUP = "in_allowed_group"
    OWNER_GROUP = "owner_group"
    EXPLICIT_GRANT = "explicit_grant"
    NO_POLICY_DEFAULT_ALLOW = "no_policy_default_allow"
    # a memory's admin importing (a vault sync) into a project or skill of that memory
    # whose own policy does not let them write it (see AccessDecisionEngine.decide_import)
    MEMORY_ADMIN_IMPORT = "memory_admin_import"
    # an operator command run with the database's own credentials (``fortemi shard``), which
    # no policy governs: recorded so the audit log still shows who did what
    OPERATOR_DATABASE_ACCESS = "operator_database_access"
    # deny
    NOT_IN_ALLOWED_GROUPS = "not_in_allowed_groups"
    NOT_IN_OWNER_GROUP = "not_in_owner_group"
    ROLE_REQUIREMENT_FAILED = "role_requirement_failed"
    # the policy names no rule for this action (only `read` follows the policy-wide rules)
    ACTION_NOT_IN_POLICY = "action_not_in_policy"
    # a project or skill inside a memory whose policy does not let the principal read it
    MEMORY_NOT_ADMITTED = "memory_not_admitted"
    PERMISSION_REQUIRED = "permission_required"
    EXPLICIT_DENY = "explicit_deny"
    NO_POLICY_DEFAULT_DENY = "no_policy_default_deny"
    # the resource does not exist (answered NOT_FOUND, like one the caller may not read)
    NOT_FOUND = "not_found"
    # a list or search narrowed to what the caller may read (recorded once per request)
    READ_SCOPE = "read_scope"


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: Reason
    action: Action
    resource: Resource
    policy_source: str | None  # e.g. "file:projects/poimen/_access.yaml", "database", None
    policy_version: str  # hash of the whole policy set the decision was made under
