"""The access checkers: one question each, composed by the engine in a fixed order.

Each checker reads one policy and one principal and answers only its own question; none
knows about the others or about the order (that is :mod:`fortemi.auth.policy.engine`'s).
A checker that has no objection returns None. They are plain functions over frozensets,
because they run on every request and again for every name a read scope evaluates.
"""

from __future__ import annotations

from collections.abc import Mapping

from fortemi.auth.decision import Action, Reason
from fortemi.auth.policy.model import AccessLevel, Policy
from fortemi.auth.principal import Principal

__all__ = [
    "best_rank",
    "check_access_level",
    "check_action_stated",
    "check_deny",
    "check_grant",
    "check_permission",
    "check_role",
]


def check_deny(policy: Policy, principal: Principal) -> Reason | None:
    """``explicit_deny`` if the principal's subject or any of its groups is denied."""
    if principal.sub in policy.deny_subjects or not policy.deny_groups.isdisjoint(principal.groups):
        return Reason.EXPLICIT_DENY
    return None


def check_grant(policy: Policy, principal: Principal) -> Reason | None:
    """``explicit_grant`` if the subject, a group, a role or a permission is granted."""
    if (
        principal.sub in policy.grant_subjects
        or not policy.grant_groups.isdisjoint(principal.groups)
        or not policy.grant_roles.isdisjoint(principal.roles)
        or not policy.grant_permissions.isdisjoint(principal.permissions)
    ):
        return Reason.EXPLICIT_GRANT
    return None


def check_action_stated(policy: Policy, action: Action) -> Reason | None:
    """``action_not_in_policy`` unless the policy has rules for ``action``
    (see :meth:`Policy.states`): an unmentioned write, delete or admin is closed."""
    return None if policy.states(action) else Reason.ACTION_NOT_IN_POLICY


def check_access_level(policy: Policy, principal: Principal) -> tuple[bool, Reason]:
    """Whether the access level admits the principal, and why (the reason an allowed
    decision finally carries if the role and permission checks pass)."""
    level = policy.access_level
    if level is AccessLevel.PUBLIC:
        return True, Reason.ACCESS_LEVEL_PUBLIC
    # Group level asks allowed_groups first: the seed's scenario has charlie (in the owner
    # group *and* an allowed group) read poimen as `in_allowed_group`. The decision is the
    # same either way; only the reason differs.
    if level is AccessLevel.GROUP and not policy.allowed_groups.isdisjoint(principal.groups):
        return True, Reason.IN_ALLOWED_GROUP
    if policy.owner_group is not None and policy.owner_group in principal.groups:
        return True, Reason.OWNER_GROUP
    if level is AccessLevel.GROUP:
        return False, Reason.NOT_IN_ALLOWED_GROUPS
    return False, Reason.NOT_IN_OWNER_GROUP


def best_rank(principal: Principal, ranks: Mapping[str, int]) -> int:
    """The rank of the principal's highest role in the order; -1 if it holds none."""
    best = -1
    for role in principal.roles:
        rank = ranks.get(role, -1)
        if rank > best:
            best = rank
    return best


def check_role(
    policy: Policy, principal: Principal, action: Action, ranks: Mapping[str, int]
) -> Reason | None:
    """``role_requirement_failed`` unless the principal meets the action's required role.

    A role in the order (``ranks``) is a minimum: any role ranked at least as high meets
    it. A role outside the order (``auditor``, say) implies nothing: it must be held.
    """
    required = policy.role_for(action)
    if required is None:
        return None
    rank = ranks.get(required)
    if rank is None:
        met = required in principal.roles
    else:
        met = best_rank(principal, ranks) >= rank
    return None if met else Reason.ROLE_REQUIREMENT_FAILED


def check_permission(policy: Policy, principal: Principal, action: Action) -> Reason | None:
    """``permission_required`` unless the principal holds the action's required permission."""
    required = policy.permission_for(action)
    if required is None or required in principal.permissions:
        return None
    return Reason.PERMISSION_REQUIRED
