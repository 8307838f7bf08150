"""Each checker answers its one question, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.auth.decision import Action, Reason, ResourceType
from fortemi.auth.policy import Policy, parse_policy
from fortemi.auth.policy.checkers import (
    best_rank,
    check_access_level,
    check_deny,
    check_grant,
    check_permission,
    check_role,
)

from .helpers import principal

RANKS = {"viewer": 0, "editor": 1, "admin": 2}


def policy(**document: Any) -> Policy:
    return parse_policy(
        {"access_level": "public", **document},
        resource_type=ResourceType.PROJECT,
        name="p",
        memory=None,
        source="test",
        file="test",
        require_identity=False,
    )


# -- deny ---------------------------------------------------------------------------------

DENYING = policy(deny={"groups": ["contractors"], "subjects": ["mallory"]})


def test_deny_matches_a_denied_subject() -> None:
    assert check_deny(DENYING, principal("mallory")) is Reason.EXPLICIT_DENY


def test_deny_matches_any_denied_group() -> None:
    assert check_deny(DENYING, principal(groups=["staff", "contractors"])) is Reason.EXPLICIT_DENY


def test_deny_has_no_objection_to_others() -> None:
    assert check_deny(DENYING, principal("alice", ["staff"], ["admin"], ["mallory"])) is None


# -- grant --------------------------------------------------------------------------------

GRANTING = policy(
    grant={"groups": ["g"], "subjects": ["s"], "roles": ["auditor"], "permissions": ["audit:read"]}
)


@pytest.mark.parametrize(
    "who",
    [
        principal("s"),
        principal(groups=["x", "g"]),
        principal(roles=["auditor"]),
        principal(permissions=["audit:read"]),
    ],
    ids=["subject", "group", "role", "permission"],
)
def test_grant_matches_each_kind_of_grant(who: Any) -> None:
    assert check_grant(GRANTING, who) is Reason.EXPLICIT_GRANT


def test_grant_does_not_match_names_of_another_kind() -> None:
    # "g" as a role, "auditor" as a group: a grant is per kind, never across kinds.
    assert check_grant(GRANTING, principal("x", groups=["auditor", "s"], roles=["g"])) is None


# -- access level -------------------------------------------------------------------------


def test_public_admits_everyone() -> None:
    assert check_access_level(policy(), principal()) == (True, Reason.ACCESS_LEVEL_PUBLIC)


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (["owners"], (True, Reason.OWNER_GROUP)),
        (["owners", "friends"], (True, Reason.IN_ALLOWED_GROUP)),  # allowed groups first
        (["friends"], (True, Reason.IN_ALLOWED_GROUP)),
        (["strangers"], (False, Reason.NOT_IN_ALLOWED_GROUPS)),
    ],
)
def test_group_level_admits_allowed_groups_then_the_owner_group(
    groups: list[str], expected: tuple[bool, Reason]
) -> None:
    level = policy(access_level="group", owner_group="owners", allowed_groups=["friends"])
    assert check_access_level(level, principal(groups=groups)) == expected


def test_private_level_admits_the_owner_group_only() -> None:
    level = policy(access_level="private", owner_group="owners", allowed_groups=["friends"])
    assert check_access_level(level, principal(groups=["owners"])) == (True, Reason.OWNER_GROUP)
    assert check_access_level(level, principal(groups=["friends"])) == (
        False,
        Reason.NOT_IN_OWNER_GROUP,
    )


def test_private_without_an_owner_admits_no_one() -> None:
    assert check_access_level(policy(access_level="private"), principal(groups=["x"]))[0] is False


# -- role ---------------------------------------------------------------------------------


def test_best_rank_is_the_highest_ranked_role_held() -> None:
    assert best_rank(principal(roles=["viewer", "admin", "auditor"]), RANKS) == 2
    assert best_rank(principal(roles=["auditor"]), RANKS) == -1


@pytest.mark.parametrize(
    ("roles", "met"),
    [(["viewer"], False), (["editor"], True), (["admin"], True), (["auditor"], False), ([], False)],
)
def test_a_ranked_required_role_is_a_minimum(roles: list[str], met: bool) -> None:
    result = check_role(policy(required_role="editor"), principal(roles=roles), Action.READ, RANKS)
    assert result is (None if met else Reason.ROLE_REQUIREMENT_FAILED)


def test_an_unranked_required_role_must_be_held_exactly() -> None:
    needs_auditor = policy(required_role="auditor")
    assert check_role(needs_auditor, principal(roles=["admin"]), Action.READ, RANKS) is (
        Reason.ROLE_REQUIREMENT_FAILED
    )
    assert check_role(needs_auditor, principal(roles=["auditor"]), Action.READ, RANKS) is None


def test_an_action_override_replaces_the_required_role() -> None:
    rules = policy(required_role="viewer", actions={"write": {"required_role": "admin"}})
    editor = principal(roles=["editor"])
    assert check_role(rules, editor, Action.READ, RANKS) is None
    assert check_role(rules, editor, Action.WRITE, RANKS) is Reason.ROLE_REQUIREMENT_FAILED


def test_an_override_to_null_removes_the_requirement_for_that_action_only() -> None:
    rules = policy(required_role="admin", actions={"read": {"required_role": None}})
    assert check_role(rules, principal(), Action.READ, RANKS) is None
    assert check_role(rules, principal(), Action.WRITE, RANKS) is Reason.ROLE_REQUIREMENT_FAILED


def test_an_override_naming_only_a_permission_keeps_the_required_role() -> None:
    rules = policy(required_role="editor", actions={"write": {"required_permission": "w"}})
    viewer = principal(roles=["viewer"], permissions=["w"])
    assert check_role(rules, viewer, Action.WRITE, RANKS) is Reason.ROLE_REQUIREMENT_FAILED


# -- permission ---------------------------------------------------------------------------


def test_a_required_permission_must_be_held() -> None:
    rules = policy(required_permission="skill:read")
    assert check_permission(rules, principal(), Action.READ) is Reason.PERMISSION_REQUIRED
    assert check_permission(rules, principal(permissions=["skill:read"]), Action.READ) is None


def test_a_permission_override_applies_to_its_action() -> None:
    rules = policy(actions={"delete": {"required_permission": "x:delete"}})
    assert check_permission(rules, principal(), Action.READ) is None
    assert check_permission(rules, principal(), Action.DELETE) is Reason.PERMISSION_REQUIRED
