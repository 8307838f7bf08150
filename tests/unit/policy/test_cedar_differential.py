"""The engine, held against Cedar: random policy sets translated into Cedar must decide alike.

A small translator turns the policies in force of a :class:`PolicySet` into Cedar text, and
each request into Cedar entities; ``cedarpy`` then decides, and must allow exactly when
:meth:`AccessDecisionEngine.decide` allows. The translation follows the documented
semantics, not the engine's code: it reads the policy's raw fields (per-action overrides
included) and computes the principal's rank itself.

Each policy becomes, scoped to ``resource == <Type>::"<name>"`` and its memory:

* one ``forbid`` per non-empty deny list (subjects, groups): Cedar's forbid overrides
  every permit, as Fortemi's deny beats its grant;
* one ``permit`` per non-empty grant list (subjects, groups, roles, permissions);
* one ``permit`` per action the policy states (``read``, and each action named under
  ``actions``) for access level ∧ required role ∧ required permission, the action's
  overrides expanded (a role in the order is ``principal.rank >= k``, one outside it must
  be held exactly); an action it does not state gets no permit, so only a grant reaches it.

Each memory is a boundary: one ``forbid`` per memory policy for every ``Project`` and
``Skill`` in that memory unless the policy admits the principal for ``read`` (not denied,
and granted or meeting its read rules), written out as one Cedar expression; one more
``forbid`` closes them in every memory without a policy (the default deny).

A policy for every memory steps aside (``when { !["m1"].contains(resource.memory) }``)
in the memories that have a policy of their own, as the set's lookup prefers those.

Only sets with ``default: deny`` are generated: Cedar denies whatever no permit matches,
which is Fortemi's default deny for a resource without a policy, and has no counterpart
for ``default: allow``. Only project, skill and memory resources are asked about; system
and audit policies go through the same checkers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import cedarpy
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from fortemi.auth.decision import Action, Resource, ResourceType
from fortemi.auth.policy import AccessDecisionEngine, PolicySet, load_policy_directory
from fortemi.auth.policy.model import AccessLevel, Policy
from fortemi.auth.principal import Principal

from .helpers import DEFAULT, FIXTURE_POLICIES, OPEN_MEMORIES, build_set, principal
from .test_properties import (
    MEMORIES,
    PROJECTS,
    SKILLS,
    UNLISTED,
    Docs,
    policy_docs,
    principals,
)

ENGINE = AccessDecisionEngine()

CEDAR_TYPES = {
    ResourceType.PROJECT: "Project",
    ResourceType.SKILL: "Skill",
    ResourceType.MEMORY: "Memory",
}

# Validating every translation against a schema catches a malformed translation (a typo'd
# attribute, a Long compared to a String) that Cedar would otherwise skip as an evaluation
# error, which reads as "no permit matched" and could pass for agreement on a deny.
SCHEMA = cedarpy.Schema.from_str(
    """
    entity User {
      groups: Set<String>,
      roles: Set<String>,
      permissions: Set<String>,
      rank: Long,
    };
    entity Project, Skill, Memory {
      memory: String,
    };
    action "read", "write", "delete", "admin" appliesTo {
      principal: [User],
      resource: [Project, Skill, Memory],
    };
    """
)


# -- the translator ---------------------------------------------------------------------------


def literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def string_set(items: Iterable[str]) -> str:
    return "[" + ", ".join(literal(item) for item in sorted(items)) + "]"


def user(sub: str) -> str:
    return f"User::{literal(sub)}"


def translate(policies: PolicySet) -> str:
    """The Cedar text for the project, skill and memory policies in force in ``policies``."""
    in_force = [p for p in policies.policies() if p.resource_type in CEDAR_TYPES]
    own_memories: dict[tuple[ResourceType, str | None], set[str]] = {}
    for policy in in_force:
        if policy.memory is not None:
            own_memories.setdefault((policy.resource_type, policy.name), set()).add(policy.memory)
    ranks = {role: rank for rank, role in enumerate(policies.role_order)}
    statements: list[str] = []
    for policy in sorted(in_force, key=lambda p: (p.resource_type, p.name or "", p.memory or "")):
        shadowed = own_memories.get((policy.resource_type, policy.name), set())
        statements += translate_policy(policy, ranks, shadowed)
    memory_policies = {
        p.name: p for p in in_force if p.resource_type is ResourceType.MEMORY and p.name
    }
    # A memory without a policy (the default deny) closes everything inside it.
    closed = (
        f"!{string_set(memory_policies)}.contains(resource.memory)" if memory_policies else "true"
    )
    statements.append(
        "// memories without a policy\nforbid(principal, action, resource)\n"
        f"  when {{ {INSIDE} && {closed} }};"
    )
    for memory, policy in sorted(memory_policies.items()):
        statements.append(boundary(memory, policy, ranks))
    return "\n".join(statements)


INSIDE = "(resource is Project || resource is Skill)"


def boundary(memory: str, policy: Policy, ranks: dict[str, int]) -> str:
    """The ``forbid`` that closes every project and skill in ``memory`` to a principal its
    policy does not admit for ``read``."""
    inside = f"{INSIDE} && resource.memory == {literal(memory)}"
    denied = any_of(deny_conditions(policy))
    granted = any_of(grant_conditions(policy))
    access = access_condition(policy)
    reads = (
        "false"
        if access is None
        else all_of([*access, *action_requirements(policy, Action.READ, ranks)])
    )
    admits = f"!({denied}) && ({granted} || ({reads}))"
    return (
        f"// memory {memory}: {policy.source}\nforbid(principal, action, resource)\n"
        f"  when {{ {inside} && !({admits}) }};"
    )


def any_of(conditions: Sequence[str]) -> str:
    kept = [c for c in conditions if c != "false"]
    return " || ".join(f"({c})" for c in kept) if kept else "false"


def all_of(conditions: Sequence[str]) -> str:
    return " && ".join(f"({c})" for c in conditions) if conditions else "true"


def deny_conditions(policy: Policy) -> list[str]:
    conditions: list[str] = []
    if policy.deny_subjects:
        users = ", ".join(user(sub) for sub in sorted(policy.deny_subjects))
        conditions.append(f"principal in [{users}]")
    if policy.deny_groups:
        conditions.append(f"principal.groups.containsAny({string_set(policy.deny_groups)})")
    return conditions


def grant_conditions(policy: Policy) -> list[str]:
    conditions: list[str] = []
    if policy.grant_subjects:
        users = ", ".join(user(sub) for sub in sorted(policy.grant_subjects))
        conditions.append(f"principal in [{users}]")
    for attribute, granted in (
        ("groups", policy.grant_groups),
        ("roles", policy.grant_roles),
        ("permissions", policy.grant_permissions),
    ):
        if granted:
            conditions.append(f"principal.{attribute}.containsAny({string_set(granted)})")
    return conditions


def action_requirements(policy: Policy, action: Action, ranks: dict[str, int]) -> list[str]:
    """The role and permission ``action`` requires, its overrides expanded."""
    override = policy.actions.get(action)
    role = policy.required_role
    if override is not None and override.sets_role:
        role = override.required_role
    permission = policy.required_permission
    if override is not None and override.sets_permission:
        permission = override.required_permission
    requirements: list[str] = []
    if role is not None and role in ranks:
        requirements.append(f"principal.rank >= {ranks[role]}")  # a minimum
    elif role is not None:
        requirements.append(f"principal.roles.contains({literal(role)})")  # held exactly
    if permission is not None:
        requirements.append(f"principal.permissions.contains({literal(permission)})")
    return requirements


def translate_policy(policy: Policy, ranks: dict[str, int], shadowed: set[str]) -> list[str]:
    """``policy`` as Cedar statements; ``shadowed`` are the memories where a memory's own
    policy takes precedence over this one (only relevant when it is for every memory)."""
    assert policy.name is not None
    target = f"resource == {CEDAR_TYPES[policy.resource_type]}::{literal(policy.name)}"
    where: list[str] = []
    if policy.memory is not None:
        where.append(f"resource.memory == {literal(policy.memory)}")
    elif shadowed:
        where.append(f"!{string_set(shadowed)}.contains(resource.memory)")

    def statement(effect: str, action: Action | None, condition: Sequence[str]) -> str:
        scope = "action" if action is None else f"action == Action::{literal(action.value)}"
        conditions = [*where, *condition]
        when = f"\n  when {{ {' && '.join(conditions)} }}" if conditions else ""
        return f"{effect}(principal, {scope}, {target}){when};"

    out = [f"// {policy.source}, memory {policy.memory or '*'}"]
    out.extend(statement("forbid", None, [condition]) for condition in deny_conditions(policy))

    out.extend(statement("permit", None, [condition]) for condition in grant_conditions(policy))

    access = access_condition(policy)
    if access is None:
        return out  # the access level admits nobody: only a grant can allow
    for action in Action:
        if action is not Action.READ and action not in policy.actions:
            continue  # not stated: no permit, only a grant reaches it
        out.append(
            statement("permit", action, [*access, *action_requirements(policy, action, ranks)])
        )
    return out


def access_condition(policy: Policy) -> list[str] | None:
    """The access level as Cedar conditions: [] admits everyone, None admits nobody."""
    if policy.access_level is AccessLevel.PUBLIC:
        return []
    admitted = set(policy.allowed_groups) if policy.access_level is AccessLevel.GROUP else set()
    if policy.owner_group is not None:
        admitted.add(policy.owner_group)
    if not admitted:
        return None
    return [f"principal.groups.containsAny({string_set(admitted)})"]


def cedar_allows(
    cedar_policies: cedarpy.PolicySet,
    role_order: Sequence[str],
    who: Principal,
    action: Action,
    resource: Resource,
) -> bool:
    """Cedar's decision for one request; an evaluation error fails the test."""
    assert resource.name is not None
    assert resource.memory is not None
    held = [role_order.index(role) for role in who.roles if role in role_order]
    resource_uid = {"type": CEDAR_TYPES[resource.type], "id": resource.name}
    entities: list[dict[str, Any]] = [
        {
            "uid": {"type": "User", "id": who.sub},
            "attrs": {
                "groups": sorted(who.groups),
                "roles": sorted(who.roles),
                "permissions": sorted(who.permissions),
                "rank": max(held, default=-1),
            },
            "parents": [],
        },
        {"uid": resource_uid, "attrs": {"memory": resource.memory}, "parents": []},
    ]
    request = {
        "principal": {"type": "User", "id": who.sub},
        "action": {"type": "Action", "id": action.value},
        "resource": resource_uid,
        "context": {},
    }
    result = cedarpy.is_authorized(request, cedar_policies, entities, SCHEMA)
    assert result.diagnostics.errors == []
    return result.allowed


def compile_cedar(policies: PolicySet) -> cedarpy.PolicySet:
    text = translate(policies)
    note(f"Cedar policies:\n{text}")
    validation = cedarpy.validate_policies(text, SCHEMA)
    assert validation.validation_passed, [str(error) for error in validation.errors]
    return cedarpy.PolicySet.from_str(text)


# -- the differential property ----------------------------------------------------------------

# test_properties' resources() without system and audit, built rather than filtered so
# that no draw is thrown away.
NAMED_RESOURCES = st.one_of(
    st.builds(Resource.of_memory, st.sampled_from(MEMORIES)),
    *(
        st.builds(
            Resource,
            st.just(type_),
            st.sampled_from([*names, UNLISTED[type_.value]]),
            st.sampled_from(MEMORIES),
        )
        for type_, names in ((ResourceType.PROJECT, PROJECTS), (ResourceType.SKILL, SKILLS))
    ),
)


def governed(policies: PolicySet) -> list[Resource]:
    """Every resource some policy of ``policies`` is in force for, in each memory it covers."""
    found: set[Resource] = set()
    for policy in policies.policies():
        assert policy.name is not None
        for memory in MEMORIES if policy.memory is None else [policy.memory]:
            if policy.resource_type is ResourceType.MEMORY:
                found.add(Resource.of_memory(policy.name))
            else:
                found.add(Resource(policy.resource_type, policy.name, memory))
    return sorted(found, key=str)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_docs(), st.lists(principals(), min_size=1, max_size=4), NAMED_RESOURCES)
def test_cedar_allows_exactly_what_the_engine_allows(
    docs: tuple[dict[str, Any], Docs, Docs], people: list[Principal], elsewhere: Resource
) -> None:
    default, files, database = docs
    policies = build_set({**default, "default": "deny"}, files, database)
    cedar_policies = compile_cedar(policies)
    # Every action on every resource with a policy, plus one drawn from the pools (often
    # without one): requests drawn from the pools alone mostly meet no policy at all.
    for who in people:
        for resource in [*governed(policies), elsewhere]:
            for action in Action:
                decision = ENGINE.decide(policies, who, action, resource)
                event(f"engine: {decision.reason.value}")
                cedar = cedar_allows(cedar_policies, policies.role_order, who, action, resource)
                assert cedar == decision.allowed, (
                    f"{who.sub} groups={sorted(who.groups)} roles={sorted(who.roles)} "
                    f"permissions={sorted(who.permissions)} {action.value} {resource}: "
                    f"engine {decision.allowed} ({decision.reason.value}), Cedar {cedar}"
                )


# -- the translator on known answers ----------------------------------------------------------

CHARLIE = principal("charlie", ["platform-team", "devops-team"], ["viewer"])
ALICE = principal("alice", ["data-team"], ["viewer"])
BOB = principal("bob", ["ml-team"], ["viewer"])
ADMIN = principal("root", ["platform-team"], ["admin"])


def poimen(memory: str = "default") -> Resource:
    return Resource(ResourceType.PROJECT, "poimen", memory)


def project(name: str, memory: str = "m1") -> Resource:
    return Resource(ResourceType.PROJECT, name, memory)


PRIVATE_DEBUG = Resource(ResourceType.SKILL, "SKILL-private-debug", "default")


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    contents = load_policy_directory(FIXTURE_POLICIES)
    assert contents.errors == []
    assert contents.defaults is not None
    return PolicySet(contents.defaults, [contents.policies])


@pytest.mark.parametrize(
    ("who", "action", "resource", "allowed"),
    [
        (CHARLIE, Action.READ, poimen(), True),  # the seed: in an allowed group
        (ALICE, Action.READ, poimen(), False),  # in neither allowed group
        (CHARLIE, Action.WRITE, poimen(), False),  # writing needs editor
        (ADMIN, Action.WRITE, poimen(), True),  # admin ranks above editor
        (BOB, Action.READ, PRIVATE_DEBUG, True),  # a viewer in the owner group
        (ADMIN, Action.READ, PRIVATE_DEBUG, False),  # private: no role opens it
        (CHARLIE, Action.READ, project("no-policy", "default"), False),  # default deny
    ],
    ids=[
        "charlie-reads-poimen",
        "alice-denied-poimen",
        "viewer-cannot-write-poimen",
        "admin-writes-poimen",
        "owner-group-reads-private-debug",
        "admin-outside-owner-group-denied-private-debug",
        "no-policy-denied",
    ],
)
def test_cedar_decides_the_shipped_seed_scenarios(
    shipped: PolicySet, who: Principal, action: Action, resource: Resource, allowed: bool
) -> None:
    cedar_policies = cedarpy.PolicySet.from_str(translate(shipped))
    assert cedar_allows(cedar_policies, shipped.role_order, who, action, resource) is allowed
    assert ENGINE.decide(shipped, who, action, resource).allowed is allowed


OPEN: dict[str, Any] = {"access_level": "public"}
DENY_BEATS_GRANT = build_set(
    files={
        **OPEN_MEMORIES,
        ("project", "p"): {**OPEN, "deny": {"groups": ["g"]}, "grant": {"subjects": ["alice"]}},
    }
)
ROLE_MINIMUM = build_set(
    files={**OPEN_MEMORIES, ("project", "p"): {**OPEN, "required_role": "editor"}}
)
UNRANKED_ROLE = build_set(
    files={**OPEN_MEMORIES, ("project", "p"): {**OPEN, "required_role": "auditor"}}
)
CUSTOM_ORDER = build_set(
    {**DEFAULT, "roles": ["reader", "writer"]},
    files={**OPEN_MEMORIES, ("project", "p"): {**OPEN, "required_role": "reader"}},
)
GRANT_SKIPS_CHECKS = build_set(
    files={
        **OPEN_MEMORIES,
        ("project", "p"): {
            "access_level": "private",
            "required_role": "admin",
            "required_permission": "x",
            "grant": {"roles": ["auditor"]},
        },
    }
)
PER_ACTION = build_set(
    files={
        **OPEN_MEMORIES,
        ("project", "p"): {
            **OPEN,
            "required_permission": "x",
            "actions": {"read": {"required_permission": None}, "write": {}},
        },
    }
)
# A memory's own database policy beats the one for every memory, in that memory only.
MEMORY_PRECEDENCE = build_set(
    files=OPEN_MEMORIES,
    database={
        ("project", None, "p"): OPEN,
        ("project", "m1", "p"): {"access_level": "private", "owner_group": "g"},
    },
)

# Memory m1 is its owners' alone: a project's grant or open rules do not reach into it.
MEMORY_BOUNDARY = build_set(
    files={
        ("memory", "m1"): {"access_level": "private", "owner_group": "owners"},
        ("memory", "m2"): {"access_level": "public", "deny": {"subjects": ["mallory"]}},
        ("project", "p"): {
            **OPEN,
            "actions": {"write": {}, "delete": {}},
            "grant": {"subjects": ["alice", "mallory"]},
        },
        ("skill", "SKILL-s"): {**OPEN, "actions": {"write": {}}},
    }
)
# A skill that states only its read requirement: writing, deleting, administering closed.
SILENT = build_set(
    files={**OPEN_MEMORIES, ("skill", "SKILL-s"): {**OPEN, "required_permission": "skill:read"}}
)


def skill(name: str, memory: str = "m1") -> Resource:
    return Resource(ResourceType.SKILL, name, memory)


READER = principal("pat", permissions=["skill:read"])


@pytest.mark.parametrize(
    ("policies", "who", "action", "resource", "allowed"),
    [
        (DENY_BEATS_GRANT, principal("alice", ["g"]), Action.READ, project("p"), False),
        (DENY_BEATS_GRANT, principal("alice"), Action.READ, project("p"), True),
        (ROLE_MINIMUM, principal(roles=["viewer"]), Action.READ, project("p"), False),
        (ROLE_MINIMUM, principal(roles=["editor"]), Action.READ, project("p"), True),
        (ROLE_MINIMUM, principal(roles=["admin"]), Action.READ, project("p"), True),
        (UNRANKED_ROLE, principal(roles=["admin"]), Action.READ, project("p"), False),
        (UNRANKED_ROLE, principal(roles=["auditor"]), Action.READ, project("p"), True),
        (CUSTOM_ORDER, principal(roles=["writer"]), Action.READ, project("p"), True),
        (CUSTOM_ORDER, principal(roles=["viewer"]), Action.READ, project("p"), False),
        (GRANT_SKIPS_CHECKS, principal(roles=["auditor"]), Action.ADMIN, project("p"), True),
        (GRANT_SKIPS_CHECKS, principal(roles=["admin"]), Action.ADMIN, project("p"), False),
        (PER_ACTION, principal(), Action.READ, project("p"), True),
        (PER_ACTION, principal(), Action.WRITE, project("p"), False),
        (PER_ACTION, principal(permissions=["x"]), Action.WRITE, project("p"), True),
        (MEMORY_PRECEDENCE, principal(), Action.READ, project("p", "m1"), False),
        (MEMORY_PRECEDENCE, principal(groups=["g"]), Action.READ, project("p", "m1"), True),
        (MEMORY_PRECEDENCE, principal(), Action.READ, project("p", "m2"), True),
        (MEMORY_BOUNDARY, principal("alice"), Action.READ, project("p"), False),
        (MEMORY_BOUNDARY, principal("alice"), Action.WRITE, project("p"), False),
        (MEMORY_BOUNDARY, principal("olga", ["owners"]), Action.WRITE, project("p"), True),
        (MEMORY_BOUNDARY, principal("bo", roles=["admin"]), Action.WRITE, skill("SKILL-s"), False),
        (MEMORY_BOUNDARY, principal("alice"), Action.WRITE, project("p", "m2"), True),
        (MEMORY_BOUNDARY, principal("mallory"), Action.READ, project("p", "m2"), False),
        (MEMORY_BOUNDARY, principal("x"), Action.READ, project("p", "m3"), False),
        (SILENT, READER, Action.READ, skill("SKILL-s"), True),
        (SILENT, READER, Action.WRITE, skill("SKILL-s"), False),
        (SILENT, READER, Action.DELETE, skill("SKILL-s"), False),
        (SILENT, READER, Action.ADMIN, skill("SKILL-s"), False),
    ],
    ids=[
        "deny-beats-grant",
        "grant-without-deny",
        "viewer-below-editor-minimum",
        "editor-meets-editor-minimum",
        "admin-exceeds-editor-minimum",
        "admin-does-not-imply-unranked-auditor",
        "auditor-held-exactly",
        "custom-order-writer-meets-reader",
        "custom-order-viewer-is-unranked",
        "grant-skips-access-role-permission",
        "private-without-owner-admits-nobody",
        "override-removes-permission-for-read",
        "write-keeps-policy-permission",
        "write-with-permission",
        "memory-own-policy-denies-outsider",
        "memory-own-policy-admits-owner",
        "every-memory-policy-elsewhere",
        "project-grant-stops-at-a-closed-memory",
        "project-write-stops-at-a-closed-memory",
        "memory-owner-writes-the-project",
        "admin-role-stops-at-a-closed-memory",
        "open-memory-lets-the-project-decide",
        "memory-deny-reaches-its-projects",
        "memory-without-policy-closes-its-projects",
        "skill-read-permission-reads",
        "skill-read-permission-does-not-write",
        "skill-read-permission-does-not-delete",
        "skill-read-permission-does-not-administer",
    ],
)
def test_cedar_decides_hand_written_cases(
    policies: PolicySet, who: Principal, action: Action, resource: Resource, allowed: bool
) -> None:
    cedar_policies = cedarpy.PolicySet.from_str(translate(policies))
    assert cedar_allows(cedar_policies, policies.role_order, who, action, resource) is allowed
    assert ENGINE.decide(policies, who, action, resource).allowed is allowed
