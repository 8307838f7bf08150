"""The engine's order, its lookup precedence, the policy set's version and read scopes.

Projects and skills are asked about inside memories m1 and m2, opened by ``OPEN_MEMORIES``
unless a test is about the memory boundary itself.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import AccessDecisionEngine, PolicyRef

from .helpers import DEFAULT, OPEN_MEMORIES, build_set, principal

ENGINE = AccessDecisionEngine()
OPEN: dict[str, Any] = {"access_level": "public"}


def project(name: str, memory: str = "m1") -> Resource:
    return Resource(ResourceType.PROJECT, name, memory)


# -- order ----------------------------------------------------------------------------------


def test_deny_beats_grant() -> None:
    rules = {**OPEN, "deny": {"groups": ["g"]}, "grant": {"subjects": ["alice"]}}
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    decision = ENGINE.decide(policies, principal("alice", ["g"]), Action.READ, project("p"))
    assert (decision.allowed, decision.reason) == (False, Reason.EXPLICIT_DENY)


def test_grant_skips_access_level_role_and_permission() -> None:
    rules = {
        "access_level": "private",
        "required_role": "admin",
        "required_permission": "x",
        "grant": {"subjects": ["alice"]},
    }
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    decision = ENGINE.decide(policies, principal("alice"), Action.WRITE, project("p"))
    assert (decision.allowed, decision.reason) == (True, Reason.EXPLICIT_GRANT)


def test_access_level_is_checked_before_role() -> None:
    rules = {"access_level": "group", "allowed_groups": ["g"], "required_role": "admin"}
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    decision = ENGINE.decide(policies, principal(roles=["viewer"]), Action.READ, project("p"))
    assert decision.reason is Reason.NOT_IN_ALLOWED_GROUPS


def test_role_is_checked_before_permission() -> None:
    rules = {**OPEN, "required_role": "admin", "required_permission": "x"}
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    decision = ENGINE.decide(policies, principal(), Action.READ, project("p"))
    assert decision.reason is Reason.ROLE_REQUIREMENT_FAILED


def test_an_allow_carries_the_access_level_reason() -> None:
    rules = {"access_level": "group", "allowed_groups": ["g"], "required_permission": "x"}
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    who = principal(groups=["g"], permissions=["x"])
    decision = ENGINE.decide(policies, who, Action.READ, project("p"))
    assert (decision.allowed, decision.reason) == (True, Reason.IN_ALLOWED_GROUP)


def test_default_allow_allows_resources_without_a_policy() -> None:
    policies = build_set({**DEFAULT, "default": "allow"})
    decision = ENGINE.decide(policies, principal(), Action.DELETE, project("anything"))
    assert (decision.allowed, decision.reason) == (True, Reason.NO_POLICY_DEFAULT_ALLOW)
    assert decision.policy_source is None


def test_a_policy_silent_on_an_action_allows_it_to_nobody_but_its_grants() -> None:
    # A read requirement (here: the skill:read permission) never stands in for write,
    # delete or admin; only a grant reaches actions the policy does not state.
    rules = {**OPEN, "required_permission": "skill:read", "grant": {"subjects": ["gil"]}}
    policies = build_set(files={**OPEN_MEMORIES, ("skill", "SKILL-s"): rules})
    resource = Resource(ResourceType.SKILL, "SKILL-s", "m1")
    reader = principal("rea", permissions=["skill:read"])
    assert ENGINE.decide(policies, reader, Action.READ, resource).allowed
    for action in (Action.WRITE, Action.DELETE, Action.ADMIN):
        decision = ENGINE.decide(policies, reader, action, resource)
        assert (decision.allowed, decision.reason) == (False, Reason.ACTION_NOT_IN_POLICY)
        granted = ENGINE.decide(policies, principal("gil"), action, resource)
        assert (granted.allowed, granted.reason) == (True, Reason.EXPLICIT_GRANT)


def test_an_empty_action_entry_applies_the_read_rules_to_that_action() -> None:
    rules = {**OPEN, "required_role": "editor", "actions": {"write": {}}}
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    editor = principal(roles=["editor"])
    assert ENGINE.decide(policies, editor, Action.WRITE, project("p")).allowed
    viewer = ENGINE.decide(policies, principal(roles=["viewer"]), Action.WRITE, project("p"))
    assert viewer.reason is Reason.ROLE_REQUIREMENT_FAILED
    assert not ENGINE.decide(policies, editor, Action.DELETE, project("p")).allowed


def test_the_action_check_comes_after_grant_and_before_access_level() -> None:
    rules = {"access_level": "private", "owner_group": "g"}
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): rules})
    decision = ENGINE.decide(policies, principal(), Action.WRITE, project("p"))
    assert decision.reason is Reason.ACTION_NOT_IN_POLICY


# -- the memory boundary --------------------------------------------------------------------

CLOSED_MEMORY: dict[str, Any] = {"access_level": "private", "owner_group": "owners"}
WIDE_OPEN: dict[str, Any] = {
    **OPEN,
    "actions": {"write": {}, "delete": {}, "admin": {}},
    "grant": {"subjects": ["mallory"]},
}


def test_nothing_inside_a_memory_is_allowed_to_a_caller_it_does_not_admit() -> None:
    policies = build_set(
        files={
            ("memory", "alpha"): CLOSED_MEMORY,
            ("project", "poimen"): WIDE_OPEN,
            ("skill", "SKILL-s"): WIDE_OPEN,
        }
    )
    inside = [project("poimen", "alpha"), Resource(ResourceType.SKILL, "SKILL-s", "alpha")]
    for who in (principal("mallory"), principal("someone", roles=["admin"])):
        for resource in inside:
            for action in Action:
                decision = ENGINE.decide(policies, who, action, resource)
                assert (decision.allowed, decision.reason) == (
                    False,
                    Reason.MEMORY_NOT_ADMITTED,
                ), (who.sub, action, resource)
                assert decision.policy_source == "file:memory/alpha"
    owner = principal("olga", ["owners"])
    for resource in inside:
        for action in Action:
            assert ENGINE.decide(policies, owner, action, resource).allowed


def test_a_memory_without_a_policy_admits_by_the_default_decision() -> None:
    files = {("project", "p"): WIDE_OPEN}
    closed = ENGINE.decide(build_set(files=files), principal(), Action.READ, project("p"))
    assert (closed.allowed, closed.reason) == (False, Reason.MEMORY_NOT_ADMITTED)
    assert closed.policy_source is None
    opened = build_set({**DEFAULT, "default": "allow"}, files=files)
    assert ENGINE.decide(opened, principal(), Action.WRITE, project("p")).allowed


def test_a_denied_group_of_the_memory_is_denied_inside_it() -> None:
    memory = {**OPEN, "deny": {"groups": ["contractors"]}}
    policies = build_set(files={("memory", "m1"): memory, ("project", "p"): WIDE_OPEN})
    contractor = principal("con", ["contractors"])
    decision = ENGINE.decide(policies, contractor, Action.READ, project("p"))
    assert decision.reason is Reason.MEMORY_NOT_ADMITTED
    assert ENGINE.decide(policies, principal(), Action.WRITE, project("p")).allowed


def test_the_memory_is_intersected_with_the_project_not_replaced() -> None:
    # Admitted by the memory for read only; the project still decides each action.
    policies = build_set(
        files={
            ("memory", "m1"): {**OPEN, "required_role": "viewer"},
            ("project", "p"): {**OPEN, "actions": {"write": {"required_role": "editor"}}},
        }
    )
    viewer, editor = principal(roles=["viewer"]), principal(roles=["editor"])
    assert ENGINE.decide(policies, viewer, Action.READ, project("p")).allowed
    assert not ENGINE.decide(policies, viewer, Action.WRITE, project("p")).allowed
    assert ENGINE.decide(policies, editor, Action.WRITE, project("p")).allowed
    # The memory's own write rule is not asked for: a project may delegate writing.
    assert not ENGINE.decide(policies, editor, Action.WRITE, Resource.of_memory("m1")).allowed


def test_a_custom_role_order_ranks_roles() -> None:
    policies = build_set(
        {**DEFAULT, "roles": ["reader", "writer"]},
        files={**OPEN_MEMORIES, ("project", "p"): {**OPEN, "required_role": "reader"}},
    )
    assert ENGINE.decide(policies, principal(roles=["writer"]), Action.READ, project("p")).allowed
    # "viewer" is not in this order, so it is just an unranked role that meets nothing.
    viewer = ENGINE.decide(policies, principal(roles=["viewer"]), Action.READ, project("p"))
    assert viewer.reason is Reason.ROLE_REQUIREMENT_FAILED


# -- lookup ---------------------------------------------------------------------------------


def test_a_file_policy_beats_every_database_policy_for_the_resource() -> None:
    policies = build_set(
        files={**OPEN_MEMORIES, ("project", "p"): OPEN},
        database={
            ("project", "m1", "p"): {"access_level": "private"},
            ("project", None, "p"): {"access_level": "private"},
        },
    )
    decision = ENGINE.decide(policies, principal(), Action.READ, project("p", "m1"))
    assert decision.allowed
    assert decision.policy_source == "file:project/p"
    (info,) = [i for i in policies.infos() if i.name == "p"]
    assert info.source == "file:project/p"
    assert sorted(info.overrides, key=lambda r: r.memory or "") == [
        PolicyRef("database", None, policies_version_of({"access_level": "private"}, None)),
        PolicyRef("database", "m1", policies_version_of({"access_level": "private"}, "m1")),
    ]


def policies_version_of(document: dict[str, Any], memory: str | None) -> str:
    single = build_set(database={("project", memory, "p"): document})
    (policy,) = single.policies()
    return policy.version


def test_a_database_policy_for_the_memory_beats_one_for_every_memory() -> None:
    policies = build_set(
        files=OPEN_MEMORIES,
        database={
            ("project", "m1", "p"): {"access_level": "private"},
            ("project", None, "p"): OPEN,
        },
    )
    assert not ENGINE.decide(policies, principal(), Action.READ, project("p", "m1")).allowed
    assert ENGINE.decide(policies, principal(), Action.READ, project("p", "m2")).allowed


def test_a_shared_skill_policy_applies_in_every_memory() -> None:
    policies = build_set(files=OPEN_MEMORIES, database={("skill", None, "SKILL-x"): OPEN})
    for memory in ("m1", "m2"):
        resource = Resource(ResourceType.SKILL, "SKILL-x", memory)
        assert ENGINE.decide(policies, principal(), Action.READ, resource).allowed


def test_a_memory_policy_applies_to_that_memory_only() -> None:
    policies = build_set(files={("memory", "m1"): OPEN})
    assert ENGINE.decide(policies, principal(), Action.READ, Resource.of_memory("m1")).allowed
    other = ENGINE.decide(policies, principal(), Action.READ, Resource.of_memory("m2"))
    assert other.reason is Reason.NO_POLICY_DEFAULT_DENY


# -- version --------------------------------------------------------------------------------


def test_the_version_ignores_list_order_and_spelling() -> None:
    a = {**OPEN, "allowed_groups": ["a", "b", "c"], "deny": {"subjects": ["x", "y"]}}
    b = {"deny": {"subjects": ["y", "x", "x"]}, "allowed_groups": ["c", "a", "b"], **OPEN}
    b["version"] = 1  # the default, spelled out
    assert build_set(files={("project", "p"): a}).version == (
        build_set(files={("project", "p"): b}).version
    )


def test_the_version_changes_with_any_rule() -> None:
    base = build_set(files={("project", "p"): OPEN}).version
    changed = [
        build_set(files={("project", "p"): {**OPEN, "required_role": "viewer"}}).version,
        build_set(files={("project", "q"): OPEN}).version,
        build_set(database={("project", None, "p"): OPEN}).version,  # same rules, other source
        build_set(
            {**DEFAULT, "roles": ["viewer", "admin", "editor"]}, {("project", "p"): OPEN}
        ).version,
    ]
    assert len({base, *changed}) == 5


# -- read scope -----------------------------------------------------------------------------


def test_read_scope_lists_readable_names_under_default_deny() -> None:
    policies = build_set(
        files={
            **OPEN_MEMORIES,
            ("project", "open"): OPEN,
            ("project", "closed"): {"access_level": "private"},
            ("skill", "SKILL-open"): OPEN,
        },
        database={("project", "m2", "elsewhere"): OPEN},
    )
    scope = ENGINE.read_scope(policies, principal(), "m1")
    assert scope.projects.names == {"open"}
    assert scope.projects.listed_are_readable
    assert scope.skills.names == {"SKILL-open"}
    assert scope.memory
    assert scope.policy_version == policies.version


def test_read_scope_lists_unreadable_names_under_default_allow() -> None:
    policies = build_set(
        {**DEFAULT, "default": "allow"},
        files={("project", "open"): OPEN, ("project", "closed"): {"access_level": "private"}},
    )
    scope = ENGINE.read_scope(policies, principal(), "m1")
    assert scope.projects.names == {"closed"}
    assert not scope.projects.listed_are_readable
    assert scope.projects.allows("unknown")
    assert not scope.projects.allows("closed")
    assert scope.memory


def test_a_note_is_readable_by_its_skill_then_project_then_memory() -> None:
    policies = build_set(
        files={
            **OPEN_MEMORIES,
            ("project", "p"): OPEN,
            ("skill", "SKILL-s"): {"access_level": "private"},
        }
    )
    scope = ENGINE.read_scope(policies, principal(), "m1")
    assert scope.allows_note("p", None)
    assert not scope.allows_note("p", "SKILL-s")
    assert scope.allows_note(None, None)  # the memory's own notes: it admits the caller
    assert not scope.allows_note("unlisted", None)


def test_read_scope_is_cached_per_principal_and_version() -> None:
    engine = AccessDecisionEngine(read_scope_cache_size=2)
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): OPEN})
    first = engine.read_scope(policies, principal("a"), "m1")
    assert engine.read_scope(policies, principal("a"), "m1") is first
    assert engine.read_scope(policies, principal("a", ["g"]), "m1") is not first
    changed = build_set(files={**OPEN_MEMORIES, ("project", "p"): {"access_level": "private"}})
    assert not engine.read_scope(changed, principal("a"), "m1").projects.allows("p")


def test_the_read_scope_cache_is_bounded_and_evicts_the_least_recent() -> None:
    engine = AccessDecisionEngine(read_scope_cache_size=2)
    policies = build_set(files={**OPEN_MEMORIES, ("project", "p"): OPEN})
    a = engine.read_scope(policies, principal("a"), "m1")
    engine.read_scope(policies, principal("b"), "m1")
    assert engine.read_scope(policies, principal("a"), "m1") is a  # a is now most recent
    engine.read_scope(policies, principal("c"), "m1")  # evicts b
    assert engine.read_scope(policies, principal("a"), "m1") is a
    b_again = engine.read_scope(policies, principal("b"), "m1")
    assert b_again == engine.compute_read_scope(policies, principal("b"), "m1")


def test_read_scope_agrees_with_decide_on_a_large_set() -> None:
    rng = random.Random(7)  # noqa: S311 - a reproducible test fixture, not a secret
    files = {
        ("project", f"p{i}"): {
            "access_level": rng.choice(["public", "group", "private"]),
            "owner_group": rng.choice([None, "g1", "g2"]),
            "allowed_groups": rng.sample(["g1", "g2", "g3"], k=rng.randint(0, 2)),
            "required_role": rng.choice([None, "viewer", "editor"]),
        }
        for i in range(300)
    }
    policies = build_set(files={**OPEN_MEMORIES, **files})
    who = principal("u", ["g2"], ["viewer"])
    scope = ENGINE.read_scope(policies, who, "m1")
    for i in range(310):
        name = f"p{i}"
        assert scope.projects.allows(name) == (
            ENGINE.decide(policies, who, Action.READ, project(name)).allowed
        )


@pytest.mark.parametrize("default", ["deny", "allow"])
def test_read_scope_of_a_memory_that_does_not_admit_lists_no_project_or_skill(
    default: str,
) -> None:
    policies = build_set(
        {**DEFAULT, "default": default},
        files={
            ("memory", "alpha"): CLOSED_MEMORY,
            ("project", "poimen"): WIDE_OPEN,
            ("skill", "SKILL-s"): WIDE_OPEN,
        },
    )
    scope = ENGINE.read_scope(policies, principal("mallory"), "alpha")
    assert not scope.memory
    for name in ("poimen", "unlisted"):
        assert not scope.projects.allows(name)
    for name in ("SKILL-s", "SKILL-unlisted"):
        assert not scope.skills.allows(name)
    assert not scope.allows_note("poimen", None)
    assert not scope.allows_note(None, "SKILL-s")


# -- imports (a vault sync) ------------------------------------------------------------------

_ADMINISTERED = {"access_level": "public", "actions": {"admin": {"required_role": "admin"}}}
_READ_ONLY = {"access_level": "group", "allowed_groups": ["platform-team"]}


def _import_set(rules: dict[str, Any] = _READ_ONLY) -> Any:
    return build_set(files={("memory", "m1"): _ADMINISTERED, ("project", "p"): rules})


@pytest.mark.parametrize("action", [Action.READ, Action.WRITE, Action.DELETE])
def test_a_memory_admin_imports_into_a_project_whose_policy_does_not_let_them(
    action: Action,
) -> None:
    policies = _import_set()
    admin = principal("ops", roles=["admin"])
    assert not ENGINE.decide(policies, admin, action, project("p")).allowed
    decision = ENGINE.decide_import(policies, admin, action, project("p"))
    assert (decision.allowed, decision.reason) == (True, Reason.MEMORY_ADMIN_IMPORT)


def test_an_import_by_someone_who_does_not_administer_the_memory_keeps_the_projects_deny() -> None:
    policies = _import_set()
    editor = principal("ed", roles=["editor"])
    decision = ENGINE.decide_import(policies, editor, Action.WRITE, project("p"))
    assert (decision.allowed, decision.reason) == (False, Reason.ACTION_NOT_IN_POLICY)


def test_an_explicit_deny_beats_the_memory_admins_import() -> None:
    policies = _import_set({**_READ_ONLY, "deny": {"subjects": ["ops"]}})
    decision = ENGINE.decide_import(policies, principal("ops", roles=["admin"]), Action.WRITE,
                                    project("p"))  # fmt: skip
    assert (decision.allowed, decision.reason) == (False, Reason.EXPLICIT_DENY)


def test_an_import_never_administers_a_project_nor_crosses_into_another_memory() -> None:
    policies = _import_set()
    admin = principal("ops", roles=["admin"])
    assert not ENGINE.decide_import(policies, admin, Action.ADMIN, project("p")).allowed
    # m2 has no policy: the admin of m1 is not admitted into it.
    elsewhere = ENGINE.decide_import(policies, admin, Action.WRITE, project("p", "m2"))
    assert (elsewhere.allowed, elsewhere.reason) == (False, Reason.MEMORY_NOT_ADMITTED)
