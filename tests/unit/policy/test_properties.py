"""Properties of the engine over random policy sets, held against the reference evaluator.

The documents are drawn from small name pools, so that principals, policies and
resources often meet (a pool of thousands would make nearly every case "no match").
"""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fortemi.auth.decision import Action, Resource, ResourceType
from fortemi.auth.policy import AccessDecisionEngine, PolicySet
from fortemi.auth.principal import Principal
from tests.support.policy_reference import reference_decide

from .helpers import build_set, principal

ENGINE = AccessDecisionEngine()
PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GROUPS = ["platform-team", "devops-team", "ml-team", "contractors"]
ROLES = ["viewer", "editor", "admin", "auditor", "owner"]
PERMISSIONS = ["audit:read", "skill:read", "x:write"]
SUBJECTS = ["alice", "bob", "mallory"]
PROJECTS = ["poimen", "atlas", "hermes"]
SKILLS = ["SKILL-a", "SKILL-b"]
MEMORIES = ["m1", "m2"]
UNLISTED = {"project": "no-policy-project", "skill": "SKILL-no-policy"}

Docs = dict[Any, dict[str, Any]]


def _subset(pool: list[str]) -> st.SearchStrategy[list[str]]:
    """A sub-list of ``pool`` in one draw (a bit mask): cheap to generate and to shrink."""
    return st.integers(0, 2 ** len(pool) - 1).map(
        lambda mask: [item for i, item in enumerate(pool) if mask >> i & 1]
    )


def _keys(keys: list[str]) -> st.SearchStrategy[list[str]]:
    return _subset(keys)


@st.composite
def rules(draw: st.DrawFn, with_deny: bool = True) -> dict[str, Any]:
    """One policy's rules, every optional key present or absent at random."""
    doc: dict[str, Any] = {"access_level": draw(st.sampled_from(["private", "group", "public"]))}
    optional = ["owner_group", "allowed_groups", "required_role", "required_permission"]
    optional += ["actions", "grant", *(["deny"] if with_deny else [])]
    for key in draw(_keys(optional)):
        if key == "owner_group":
            doc[key] = draw(st.sampled_from([None, *GROUPS]))
        elif key == "allowed_groups":
            doc[key] = draw(_subset(GROUPS))
        elif key == "required_role":
            doc[key] = draw(st.sampled_from([None, *ROLES]))
        elif key == "required_permission":
            doc[key] = draw(st.sampled_from([None, *PERMISSIONS]))
        elif key == "actions":
            doc[key] = {
                action: {
                    field: draw(st.sampled_from([None, *pool]))
                    for field, pool in (
                        ("required_role", ROLES),
                        ("required_permission", PERMISSIONS),
                    )
                    if field in fields
                }
                for action in draw(_subset([a.value for a in Action]))
                for fields in [draw(_keys(["required_role", "required_permission"]))]
            }
        elif key == "grant":
            pools = {
                "groups": GROUPS,
                "subjects": SUBJECTS,
                "roles": ROLES,
                "permissions": PERMISSIONS,
            }
            doc[key] = {k: draw(_subset(pools[k])) for k in draw(_keys(list(pools)))}
        else:
            pools = {"groups": GROUPS, "subjects": SUBJECTS}
            doc[key] = {k: draw(_subset(pools[k])) for k in draw(_keys(list(pools)))}
    return doc


# Every place a document can be: files per (kind, name); database rows per (kind, memory,
# name), where shared skills are stored for every memory and a memory's policy under itself.
FILE_KEYS = (
    [("project", n) for n in PROJECTS]
    + [("skill", n) for n in SKILLS]
    + [("memory", n) for n in MEMORIES]
)
DATABASE_KEYS: list[tuple[str, str | None, str]] = [
    *(("project", m, n) for n in PROJECTS for m in (None, *MEMORIES)),
    *(("skill", None, n) for n in SKILLS),
    *(("memory", n, n) for n in MEMORIES),
]


@st.composite
def policy_docs(draw: st.DrawFn, with_deny: bool = True) -> tuple[dict[str, Any], Docs, Docs]:
    """(default.yaml, file documents, database documents) as plain dicts."""
    default: dict[str, Any] = {
        "system": draw(rules(with_deny)),
        "audit": draw(rules(with_deny)),
    }
    if draw(st.booleans()):
        default["default"] = draw(st.sampled_from(["deny", "allow"]))
    if draw(st.booleans()):
        ranked = draw(st.permutations(["viewer", "editor", "admin", "owner"]))
        default["roles"] = ranked[: draw(st.integers(0, 4))]
    files: Docs = {
        key: draw(rules(with_deny)) for key in draw(st.sets(st.sampled_from(FILE_KEYS), max_size=5))
    }
    database: Docs = {
        key: draw(rules(with_deny))
        for key in draw(st.sets(st.sampled_from(DATABASE_KEYS), max_size=6))
    }
    if draw(st.booleans()):
        # Half the sets let everyone into the memories they have no policy for, or the
        # memory boundary would settle nearly every project and skill decision.
        for memory in MEMORIES:
            if ("memory", memory) not in files and ("memory", memory, memory) not in database:
                files[("memory", memory)] = {"access_level": "public"}
    return default, files, database


def principals() -> st.SearchStrategy[Principal]:
    return st.builds(
        principal,
        st.sampled_from(SUBJECTS),
        _subset(GROUPS),
        _subset(ROLES),
        _subset(PERMISSIONS),
    )


def resources() -> st.SearchStrategy[Resource]:
    memory = st.sampled_from(MEMORIES)
    return st.one_of(
        st.just(Resource.system()),
        st.just(Resource.audit()),
        st.builds(Resource.of_memory, memory),
        st.builds(
            Resource,
            st.just(ResourceType.PROJECT),
            st.sampled_from([*PROJECTS, UNLISTED["project"]]),
            memory,
        ),
        st.builds(
            Resource,
            st.just(ResourceType.SKILL),
            st.sampled_from([*SKILLS, UNLISTED["skill"]]),
            memory,
        ),
    )


def engine_set(docs: tuple[dict[str, Any], Docs, Docs]) -> PolicySet:
    default, files, database = docs
    return build_set(default, files, database)


asks = st.lists(
    st.tuples(principals(), st.sampled_from(list(Action)), resources()), min_size=1, max_size=8
)


@PROPERTIES
@given(policy_docs(), asks)
def test_the_engine_decides_as_the_reference_does(
    docs: tuple[dict[str, Any], Docs, Docs], cases: list[tuple[Principal, Action, Resource]]
) -> None:
    policies = engine_set(docs)
    default, files, database = docs
    for who, action, resource in cases:
        decision = ENGINE.decide(policies, who, action, resource)
        expected = reference_decide(default, files, database, who, action.value, resource)
        assert (decision.allowed, decision.reason.value) == expected


@PROPERTIES
@given(policy_docs(), principals(), st.sampled_from(list(Action)), st.sampled_from(MEMORIES))
def test_a_resource_without_a_policy_gets_the_default(
    docs: tuple[dict[str, Any], Docs, Docs], who: Principal, action: Action, memory: str
) -> None:
    default, files, database = docs
    policies = engine_set(({**default, "default": "deny"}, files, database))
    resource = Resource(ResourceType.PROJECT, UNLISTED["project"], memory)
    decision = ENGINE.decide(policies, who, action, resource)
    expected = (
        "no_policy_default_deny" if admitted(policies, who, memory) else "memory_not_admitted"
    )
    assert (decision.allowed, decision.reason.value) == (False, expected)


def admitted(policies: PolicySet, who: Principal, memory: str) -> bool:
    """Whether ``memory``'s own policy lets ``who`` read it (the way into its contents)."""
    return ENGINE.decide(policies, who, Action.READ, Resource.of_memory(memory)).allowed


def inside_a_memory(resource: Resource) -> bool:
    return resource.type in (ResourceType.PROJECT, ResourceType.SKILL)


@PROPERTIES
@given(policy_docs(), principals(), st.sampled_from(list(Action)), resources(), st.booleans())
def test_a_denied_principal_is_denied_whatever_else_holds(
    docs: tuple[dict[str, Any], Docs, Docs],
    who: Principal,
    action: Action,
    resource: Resource,
    by_subject: bool,
) -> None:
    default, files, database = docs
    before = engine_set(docs).lookup(resource)
    if before is None:
        return  # nothing to add a deny rule to: the default-decision property covers it
    # Put the principal on the deny list of whichever document governs the resource, and on
    # its grant list too: deny must still win.
    default, files, database = copy.deepcopy((default, files, database))
    governing = _governing_document(default, files, database, resource)
    deny = governing.setdefault("deny", {})
    grant = governing.setdefault("grant", {})
    if by_subject:
        deny.setdefault("subjects", []).append(who.sub)
        grant.setdefault("subjects", []).append(who.sub)
    else:
        extra = "denied-group"
        who = principal(who.sub, [*who.groups, extra], who.roles, who.permissions)
        deny.setdefault("groups", []).append(extra)
        grant.setdefault("groups", []).append(extra)
    policies = engine_set((default, files, database))
    decision = ENGINE.decide(policies, who, action, resource)
    expected = "explicit_deny"
    if inside_a_memory(resource) and resource.memory is not None:
        if not admitted(policies, who, resource.memory):
            expected = "memory_not_admitted"  # settled before the resource's own policy
    assert (decision.allowed, decision.reason.value) == (False, expected)


def _governing_document(
    default: dict[str, Any], files: Docs, database: Docs, resource: Resource
) -> dict[str, Any]:
    kind, name, memory = resource.type.value, resource.name, resource.memory
    if kind in ("system", "audit"):
        section: dict[str, Any] = default[kind]
        return section
    for source, key in ((files, (kind, name)), (database, (kind, memory, name))):
        if key in source:
            return source[key]
    return database[(kind, None, name)]


@PROPERTIES
@given(
    policy_docs(with_deny=False),
    principals(),
    st.sampled_from([*GROUPS, "newcomers"]),
    st.sampled_from(list(Action)),
    resources(),
)
def test_adding_a_group_never_turns_allow_into_deny_without_deny_rules(
    docs: tuple[dict[str, Any], Docs, Docs],
    who: Principal,
    group: str,
    action: Action,
    resource: Resource,
) -> None:
    policies = engine_set(docs)
    more = principal(who.sub, [*who.groups, group], who.roles, who.permissions)
    if ENGINE.decide(policies, who, action, resource).allowed:
        assert ENGINE.decide(policies, more, action, resource).allowed


@PROPERTIES
@given(policy_docs(), st.randoms(use_true_random=False), asks)
def test_the_order_of_list_entries_never_changes_a_decision(
    docs: tuple[dict[str, Any], Docs, Docs],
    rng: random.Random,
    cases: list[tuple[Principal, Action, Resource]],
) -> None:
    policies = engine_set(docs)
    shuffled_docs = _shuffled(copy.deepcopy(docs), rng)
    shuffled = engine_set(shuffled_docs)
    assert shuffled.version == policies.version
    for who, action, resource in cases:
        reordered = principal(
            who.sub, _shuffled(list(who.groups), rng), _shuffled(list(who.roles), rng),
            _shuffled(list(who.permissions), rng),
        )  # fmt: skip
        assert ENGINE.decide(shuffled, reordered, action, resource) == (
            ENGINE.decide(policies, who, action, resource)
        )


def _shuffled(value: Any, rng: random.Random) -> Any:
    """``value`` with every list inside shuffled, except default.yaml's role order."""
    if isinstance(value, dict):
        ranked = "system" in value  # default.yaml: its "roles" ranks; a grant's is a set
        return {k: v if ranked and k == "roles" else _shuffled(v, rng) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_shuffled(v, rng) for v in value)
    if isinstance(value, list):
        items = [_shuffled(v, rng) for v in value]
        rng.shuffle(items)
        return items
    return value


@PROPERTIES
@given(policy_docs(), principals(), st.sampled_from(MEMORIES))
def test_a_read_scope_agrees_with_decide_on_every_name(
    docs: tuple[dict[str, Any], Docs, Docs], who: Principal, memory: str
) -> None:
    policies = engine_set(docs)
    scope = AccessDecisionEngine().read_scope(policies, who, memory)

    def readable(resource: Resource) -> bool:
        return ENGINE.decide(policies, who, Action.READ, resource).allowed

    assert scope.memory == readable(Resource.of_memory(memory))
    for name in [*PROJECTS, UNLISTED["project"]]:
        assert scope.projects.allows(name) == readable(Resource(ResourceType.PROJECT, name, memory))
    for name in [*SKILLS, UNLISTED["skill"]]:
        assert scope.skills.allows(name) == readable(Resource(ResourceType.SKILL, name, memory))


# -- the memory is a tenant boundary ----------------------------------------------------------


@PROPERTIES
@given(policy_docs(), principals(), st.sampled_from(list(Action)), resources())
def test_nothing_inside_a_memory_is_allowed_to_a_caller_the_memory_does_not_admit(
    docs: tuple[dict[str, Any], Docs, Docs], who: Principal, action: Action, resource: Resource
) -> None:
    policies = engine_set(docs)
    if not inside_a_memory(resource) or resource.memory is None:
        return
    decision = ENGINE.decide(policies, who, action, resource)
    if not admitted(policies, who, resource.memory):
        assert (decision.allowed, decision.reason.value) == (False, "memory_not_admitted")


@PROPERTIES
@given(policy_docs(), principals(), st.sampled_from(MEMORIES))
def test_a_read_scope_of_a_memory_that_does_not_admit_holds_nothing(
    docs: tuple[dict[str, Any], Docs, Docs], who: Principal, memory: str
) -> None:
    policies = engine_set(docs)
    if admitted(policies, who, memory):
        return
    scope = AccessDecisionEngine().read_scope(policies, who, memory)
    assert not scope.memory
    for name in [*PROJECTS, UNLISTED["project"]]:
        assert not scope.projects.allows(name)
    for name in [*SKILLS, UNLISTED["skill"]]:
        assert not scope.skills.allows(name)


# -- an action a policy does not state is closed ----------------------------------------------


@PROPERTIES
@given(
    policy_docs(),
    principals(),
    st.sampled_from([Action.WRITE, Action.DELETE, Action.ADMIN]),
    resources(),
)
def test_a_policy_silent_on_an_action_allows_it_only_through_a_grant(
    docs: tuple[dict[str, Any], Docs, Docs], who: Principal, action: Action, resource: Resource
) -> None:
    if engine_set(docs).lookup(resource) is None:
        return  # no policy to be silent: the default decision covers it
    default, files, database = copy.deepcopy(docs)
    governing = _governing_document(default, files, database, resource)
    governing.get("actions", {}).pop(action.value, None)  # whatever the read rules say
    decision = ENGINE.decide(engine_set((default, files, database)), who, action, resource)
    if decision.allowed:
        assert decision.reason.value == "explicit_grant"
    else:
        assert decision.reason.value in {
            "explicit_deny",
            "memory_not_admitted",
            "action_not_in_policy",
        }
