"""A reference evaluator: the policy semantics written as plainly as possible.

This is the specification in executable form, for the property tests to hold the engine
against. It shares no code with the engine or the validator: it reads the documents as
the YAML (or JSON) dicts they are, fills in the documented defaults itself, and decides
with straight-line ifs. It is deliberately slow and deliberately obvious; never call it
on a request path.

``files`` maps ``(type, name)`` to a file policy document (applies in every memory);
``database`` maps ``(type, memory or None, name)`` to a database document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fortemi.auth.decision import Resource, ResourceType
from fortemi.auth.principal import Principal

__all__ = ["Document", "reference_decide"]

Document = Mapping[str, Any]


def reference_decide(
    default: Document,
    files: Mapping[tuple[str, str], Document],
    database: Mapping[tuple[str, str | None, str], Document],
    principal: Principal,
    action: str,
    resource: Resource,
) -> tuple[bool, str]:
    """(allowed, reason code) for ``principal`` doing ``action`` on ``resource``."""
    kind = resource.type.value
    name = resource.name

    # 0. A project or skill inside a memory: only for those the memory lets read it.
    if kind in ("project", "skill") and resource.memory is not None:
        entry = Resource(ResourceType.MEMORY, resource.memory, resource.memory)
        admitted, _ = reference_decide(default, files, database, principal, "read", entry)
        if not admitted:
            return False, "memory_not_admitted"

    # 1. Which policy? system and audit live in default.yaml; a file beats the database;
    #    a database policy for this memory beats one for every memory.
    policy: Document | None = None
    if kind == "system":
        policy = default.get("system")
    elif kind == "audit":
        policy = default.get("audit")
    elif name is not None and (kind, name) in files:
        policy = files[(kind, name)]
    elif name is not None and (kind, resource.memory, name) in database:
        policy = database[(kind, resource.memory, name)]
    elif name is not None and (kind, None, name) in database:
        policy = database[(kind, None, name)]

    if policy is None:
        if default.get("default", "deny") == "allow":
            return True, "no_policy_default_allow"
        return False, "no_policy_default_deny"

    groups = list(principal.groups)
    roles = list(principal.roles)
    permissions = list(principal.permissions)

    # 2. Explicit deny always wins.
    deny = policy.get("deny", {})
    if principal.sub in deny.get("subjects", []):
        return False, "explicit_deny"
    for group in groups:
        if group in deny.get("groups", []):
            return False, "explicit_deny"

    # 3. Explicit grant comes next, and skips every other check.
    grant = policy.get("grant", {})
    if principal.sub in grant.get("subjects", []):
        return True, "explicit_grant"
    for group in groups:
        if group in grant.get("groups", []):
            return True, "explicit_grant"
    for role in roles:
        if role in grant.get("roles", []):
            return True, "explicit_grant"
    for permission in permissions:
        if permission in grant.get("permissions", []):
            return True, "explicit_grant"

    # 4. Only read follows the policy-wide rules; another action needs its own entry.
    if action != "read" and action not in policy.get("actions", {}):
        return False, "action_not_in_policy"

    # 5. The access level.
    level = policy["access_level"]
    owner = policy.get("owner_group")
    if level == "public":
        reason = "access_level_public"
    elif level == "group":
        if any(group in policy.get("allowed_groups", []) for group in groups):
            reason = "in_allowed_group"
        elif owner is not None and owner in groups:
            reason = "owner_group"
        else:
            return False, "not_in_allowed_groups"
    else:  # private
        if owner is not None and owner in groups:
            reason = "owner_group"
        else:
            return False, "not_in_owner_group"

    # 6. The required role: the action's override if it names one (even as null).
    override = policy.get("actions", {}).get(action, {})
    if "required_role" in override:
        required_role = override["required_role"]
    else:
        required_role = policy.get("required_role")
    if required_role is not None:
        order = list(default.get("roles", ["viewer", "editor", "admin"]))
        if required_role in order:
            held = [order.index(role) for role in roles if role in order]
            if not held or max(held) < order.index(required_role):
                return False, "role_requirement_failed"
        elif required_role not in roles:
            return False, "role_requirement_failed"

    # 7. The required permission, overridden the same way.
    if "required_permission" in override:
        required_permission = override["required_permission"]
    else:
        required_permission = policy.get("required_permission")
    if required_permission is not None and required_permission not in permissions:
        return False, "permission_required"

    # 8. Allowed, for the access level's reason.
    return True, reason
