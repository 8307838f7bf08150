"""The suite's seed policies (tests/data/policies, a copy of the shipped examples): they
parse, and they decide the seed scenarios."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import (
    AccessDecisionEngine,
    PolicySet,
    load_policy_directory,
    parse_policy,
)
from fortemi.auth.policy.model import Policy
from fortemi.auth.principal import Principal

from .helpers import FIXTURE_POLICIES, principal

ENGINE = AccessDecisionEngine()
CHARLIE = principal("charlie", ["platform-team", "devops-team"], ["viewer"])
DAVE = principal("dave", ["devops-team"], ["viewer"])
ALICE = principal("alice", ["data-team"], ["viewer"])
BOB = principal("bob", ["ml-team"], ["viewer"])


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return seed_set()


def seed_set(*stored: Policy) -> PolicySet:
    """The seed policies, with ``stored`` as the database layer."""
    contents = load_policy_directory(FIXTURE_POLICIES)
    assert contents.errors == []
    assert contents.defaults is not None
    return PolicySet(contents.defaults, [contents.policies, stored])


def stored_memory(name: str, document: Mapping[str, object]) -> Policy:
    return parse_policy(
        document,
        resource_type=ResourceType.MEMORY,
        name=name,
        memory=name,
        source="database",
        file=f"database:memory/{name}/{name}",
        require_identity=False,
    )


def poimen(memory: str = "default") -> Resource:
    return Resource(ResourceType.PROJECT, "poimen", memory)


def skill(name: str) -> Resource:
    return Resource(ResourceType.SKILL, name, "default")


def test_every_shipped_file_parses_into_a_policy(shipped: PolicySet) -> None:
    sources = sorted(info.source for info in shipped.infos())
    assert sources == [
        "file:default.yaml",
        "file:default.yaml",
        "file:memories/default.yaml",
        "file:projects/poimen/_access.yaml",
        "file:shared/skills/SKILL-kubernetes-debugging/_access.yaml",
        "file:shared/skills/SKILL-private-debug/_access.yaml",
    ]
    assert shipped.role_order == ("viewer", "editor", "admin")
    assert shipped.errors == ()


def test_the_shipped_poimen_policy_is_the_documented_example(shipped: PolicySet) -> None:
    policy = shipped.lookup(poimen())
    assert policy is not None
    assert policy.owner_group == "platform-team"
    assert policy.allowed_groups == {"platform-team", "devops-team"}
    assert policy.required_role == "viewer"
    assert policy.required_permission is None
    assert policy.role_for(Action.WRITE) == "editor"
    assert policy.role_for(Action.DELETE) == "editor"
    assert not policy.states(Action.ADMIN)  # unmentioned: nobody administers poimen


@pytest.mark.parametrize(
    ("who", "allowed", "reason"),
    [
        # The seed's scenario, verbatim: charlie (platform-team, devops-team) reads poimen
        # because he is in an allowed group.
        (CHARLIE, True, Reason.IN_ALLOWED_GROUP),
        (DAVE, True, Reason.IN_ALLOWED_GROUP),
        (ALICE, False, Reason.NOT_IN_ALLOWED_GROUPS),
    ],
    ids=["charlie", "dave", "alice"],
)
def test_reading_poimen_follows_its_groups(
    shipped: PolicySet, who: Principal, allowed: bool, reason: Reason
) -> None:
    decision = ENGINE.decide(shipped, who, Action.READ, poimen())
    assert (decision.allowed, decision.reason) == (allowed, reason)
    assert decision.policy_source == "file:projects/poimen/_access.yaml"
    assert decision.policy_version == shipped.version


def test_a_file_project_policy_applies_in_every_memory_that_admits_the_caller() -> None:
    viewers = {"access_level": "public", "required_role": "viewer"}
    policies = seed_set(stored_memory("ops", viewers), stored_memory("m2", viewers))
    for memory in ("default", "ops", "m2"):
        assert ENGINE.decide(policies, DAVE, Action.READ, poimen(memory)).allowed


@pytest.mark.parametrize("action", list(Action))
def test_poimen_is_closed_inside_a_memory_that_does_not_admit_its_groups(action: Action) -> None:
    # alpha belongs to its owners; poimen's groups must not open a way into it.
    owners_only = {"access_level": "private", "owner_group": "alpha-owners"}
    policies = seed_set(stored_memory("alpha", owners_only))
    editor = principal("erin", ["platform-team", "devops-team"], ["editor", "viewer"])
    decision = ENGINE.decide(policies, editor, action, poimen("alpha"))
    assert (decision.allowed, decision.reason) == (False, Reason.MEMORY_NOT_ADMITTED)
    assert decision.policy_source == "database"
    # A memory with no policy at all is closed by the default decision, and so is poimen.
    nowhere = ENGINE.decide(policies, editor, action, poimen("unlisted"))
    assert (nowhere.allowed, nowhere.reason) == (False, Reason.MEMORY_NOT_ADMITTED)


def test_writing_poimen_needs_editor(shipped: PolicySet) -> None:
    viewer = ENGINE.decide(shipped, DAVE, Action.WRITE, poimen())
    assert (viewer.allowed, viewer.reason) == (False, Reason.ROLE_REQUIREMENT_FAILED)
    editor = principal("erin", ["devops-team"], ["editor"])
    assert ENGINE.decide(shipped, editor, Action.WRITE, poimen()).allowed
    admin = principal("ada", ["devops-team"], ["admin"])  # admin ranks above editor
    assert ENGINE.decide(shipped, admin, Action.DELETE, poimen()).allowed


def test_the_private_skill_is_for_its_owner_group_only(shipped: PolicySet) -> None:
    charlie = ENGINE.decide(shipped, CHARLIE, Action.READ, skill("SKILL-private-debug"))
    assert (charlie.allowed, charlie.reason) == (False, Reason.NOT_IN_OWNER_GROUP)
    bob = ENGINE.decide(shipped, BOB, Action.READ, skill("SKILL-private-debug"))
    assert (bob.allowed, bob.reason) == (True, Reason.OWNER_GROUP)


def test_the_public_skill_needs_the_skill_read_permission(shipped: PolicySet) -> None:
    resource = skill("SKILL-kubernetes-debugging")
    without = ENGINE.decide(shipped, ALICE, Action.READ, resource)
    assert (without.allowed, without.reason) == (False, Reason.PERMISSION_REQUIRED)
    holder = principal("pat", roles=["viewer"], permissions=["skill:read"])
    granted = ENGINE.decide(shipped, holder, Action.READ, resource)
    assert (granted.allowed, granted.reason) == (True, Reason.ACCESS_LEVEL_PUBLIC)


def test_the_skill_read_permission_never_writes_or_deletes_a_skill(shipped: PolicySet) -> None:
    resource = skill("SKILL-kubernetes-debugging")
    reader = principal("pat", roles=["viewer"], permissions=["skill:read"])
    for action in (Action.WRITE, Action.DELETE):
        decision = ENGINE.decide(shipped, reader, action, resource)
        assert (decision.allowed, decision.reason) == (False, Reason.PERMISSION_REQUIRED)
    admin = ENGINE.decide(shipped, reader, Action.ADMIN, resource)
    assert (admin.allowed, admin.reason) == (False, Reason.ACTION_NOT_IN_POLICY)
    writer = principal("wes", roles=["viewer"], permissions=["skill:read", "skill:write"])
    assert ENGINE.decide(shipped, writer, Action.WRITE, resource).allowed
    assert ENGINE.decide(shipped, writer, Action.DELETE, resource).allowed


def test_a_viewer_of_the_private_skill_does_not_write_it(shipped: PolicySet) -> None:
    resource = skill("SKILL-private-debug")
    viewer = ENGINE.decide(shipped, BOB, Action.WRITE, resource)
    assert (viewer.allowed, viewer.reason) == (False, Reason.ROLE_REQUIREMENT_FAILED)
    editor = principal("eve", ["ml-team"], ["editor"])
    assert ENGINE.decide(shipped, editor, Action.WRITE, resource).allowed
    assert ENGINE.decide(shipped, editor, Action.DELETE, resource).allowed


def test_admin_alone_cannot_read_the_audit_log(shipped: PolicySet) -> None:
    admin = principal("root", roles=["admin"])
    decision = ENGINE.decide(shipped, admin, Action.READ, Resource.audit())
    assert (decision.allowed, decision.reason) == (False, Reason.NOT_IN_OWNER_GROUP)


@pytest.mark.parametrize(
    "auditor",
    [principal("aud", roles=["auditor"]), principal("svc", permissions=["audit:read"])],
    ids=["auditor-role", "audit-read-permission"],
)
def test_auditors_read_the_audit_log(shipped: PolicySet, auditor: Principal) -> None:
    decision = ENGINE.decide(shipped, auditor, Action.READ, Resource.audit())
    assert (decision.allowed, decision.reason) == (True, Reason.EXPLICIT_GRANT)
    assert decision.policy_source == "file:default.yaml"


@pytest.mark.parametrize("action", list(Action))
def test_system_operations_need_admin(shipped: PolicySet, action: Action) -> None:
    editor = ENGINE.decide(shipped, principal(roles=["editor"]), action, Resource.system())
    assert (editor.allowed, editor.reason) == (False, Reason.ROLE_REQUIREMENT_FAILED)
    admin = ENGINE.decide(shipped, principal(roles=["admin"]), action, Resource.system())
    assert (admin.allowed, admin.reason) == (True, Reason.ACCESS_LEVEL_PUBLIC)


def test_the_default_memory_reads_for_viewers_and_deletes_for_admins(shipped: PolicySet) -> None:
    memory = Resource.of_memory("default")
    editor = principal(roles=["editor"])
    assert ENGINE.decide(shipped, principal(roles=["viewer"]), Action.READ, memory).allowed
    assert not ENGINE.decide(shipped, principal(roles=["viewer"]), Action.WRITE, memory).allowed
    assert ENGINE.decide(shipped, editor, Action.WRITE, memory).allowed
    assert not ENGINE.decide(shipped, editor, Action.DELETE, memory).allowed
    assert ENGINE.decide(shipped, principal(roles=["admin"]), Action.DELETE, memory).allowed


def test_a_project_without_a_policy_is_denied_by_default(shipped: PolicySet) -> None:
    decision = ENGINE.decide(
        shipped, CHARLIE, Action.READ, Resource(ResourceType.PROJECT, "nope", "default")
    )
    assert (decision.allowed, decision.reason) == (False, Reason.NO_POLICY_DEFAULT_DENY)
    assert decision.policy_source is None
