"""Policies stored in PostgreSQL: validated on the way in, read back, scoped, cascaded."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import AccessDecisionEngine, DatabasePolicyProvider
from fortemi.auth.principal import Principal
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.memories import MemoryService
from tests.unit.policy.helpers import principal

ACTOR = "policy-tests"
ENGINE = AccessDecisionEngine()
OPS_ONLY: dict[str, Any] = {
    "access_level": "group",
    "owner_group": "ops",
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}},
}
OPS_VIEWER = principal("olga", ["ops"], ["viewer"])


async def decide(
    store: DatabasePolicyProvider, who: Principal, resource: Resource, action: Action = Action.READ
) -> tuple[bool, Reason, str | None]:
    decision = ENGINE.decide(await store.snapshot(), who, action, resource)
    return decision.allowed, decision.reason, decision.policy_source


async def test_a_put_policy_is_read_back_and_decides(
    store: DatabasePolicyProvider, memory: str, unique: str
) -> None:
    project = f"proj-{unique}"
    policy = await store.put("project", memory, project, OPS_ONLY, actor=ACTOR)
    assert (policy.resource_type, policy.memory, policy.name) == (
        ResourceType.PROJECT,
        memory,
        project,
    )

    stored = await store.get(ResourceType.PROJECT, memory, project)
    assert stored is not None
    assert stored.document == OPS_ONLY
    assert stored.updated_by == ACTOR
    assert stored.policy.version == policy.version

    resource = Resource(ResourceType.PROJECT, project, memory)
    assert await decide(store, OPS_VIEWER, resource) == (True, Reason.OWNER_GROUP, "database")
    assert (await decide(store, OPS_VIEWER, resource, Action.WRITE))[
        1
    ] is Reason.ROLE_REQUIREMENT_FAILED
    # Scoped to its memory: the same project name elsewhere has no policy.
    elsewhere = Resource(ResourceType.PROJECT, project, f"{memory}x")
    assert (await store.snapshot()).lookup(elsewhere) is None


async def test_a_second_put_replaces_the_first(
    store: DatabasePolicyProvider, db: Database, memory: str, unique: str
) -> None:
    project = f"proj-{unique}"
    await store.put("project", memory, project, OPS_ONLY, actor=ACTOR)
    await store.put("project", memory, project, {"access_level": "public"}, actor="someone-else")
    stored = await store.get("project", memory, project)
    assert stored is not None
    assert stored.document == {"access_level": "public"}
    assert stored.updated_by == "someone-else"
    count = await db.fetchval(
        "SELECT count(*) FROM public.access_policy WHERE memory = $1 AND name = $2", memory, project
    )
    assert count == 1


async def test_a_shared_skill_policy_applies_in_every_memory(
    store: DatabasePolicyProvider, memory: str, unique: str
) -> None:
    skill = f"SKILL-{unique}"
    stored = await store.put(
        ResourceType.SKILL, None, skill, {"access_level": "public"}, actor=ACTOR
    )
    policies = await store.snapshot()
    for where in (memory, "m_two"):
        assert policies.lookup(Resource(ResourceType.SKILL, skill, where)) == stored
    assert await decide(store, principal(), Resource(ResourceType.SKILL, skill, memory)) == (
        True,
        Reason.ACCESS_LEVEL_PUBLIC,
        "database",
    )
    # m_two has no policy of its own: the skill's policy applies there, but nobody is let in.
    closed = await decide(store, principal(), Resource(ResourceType.SKILL, skill, "m_two"))
    assert closed[:2] == (False, Reason.MEMORY_NOT_ADMITTED)


@pytest.mark.parametrize(
    ("document", "field", "fragment"),
    [
        (
            {"access_level": "grup"},
            "document.access_level",
            "must be one of private, group, public (got 'grup')",
        ),
        ({"access_level": "public", "acess": 1}, "document.acess", "unknown key"),
        ({"access_level": "public", "project": "other"}, "document.project", "must match the name"),
        (
            {"access_level": "public", "version": 2},
            "document.version",
            "unsupported format version 2",
        ),
        (
            {"access_level": "public", "deny": {"groups": "x"}},
            "document.deny.groups",
            "must be a list",
        ),
        ({}, "document.access_level", "missing"),
    ],
)
async def test_an_invalid_document_is_refused_naming_the_field_and_nothing_is_stored(
    store: DatabasePolicyProvider,
    memory: str,
    unique: str,
    document: dict[str, Any],
    field: str,
    fragment: str,
) -> None:
    project = f"proj-{unique}"
    with pytest.raises(BadUserInput) as caught:
        await store.put("project", memory, project, document, actor=ACTOR)
    assert caught.value.extensions["field"] == field
    assert fragment in caught.value.message
    assert await store.get("project", memory, project) is None


@pytest.mark.parametrize(
    ("kind", "memory", "name", "field"),
    [
        ("system", None, "x", "resourceType"),
        ("note", None, "x", "resourceType"),
        ("skill", "m_one", "SKILL-x", "memory"),
        ("skill", None, "not-a-skill", "name"),
        ("project", "Bad Memory", "p", "memory"),
        ("memory", "m_one", "m_two", "memory"),
        ("project", None, "", "name"),
    ],
)
async def test_an_invalid_resource_identity_is_refused(
    store: DatabasePolicyProvider, kind: str, memory: str | None, name: str, field: str
) -> None:
    with pytest.raises(BadUserInput) as caught:
        await store.put(kind, memory, name, {"access_level": "public"}, actor=ACTOR)
    assert caught.value.extensions["field"] == field


async def test_a_policy_for_an_unknown_memory_is_not_found(
    store: DatabasePolicyProvider, unique: str
) -> None:
    with pytest.raises(NotFound):
        await store.put("project", f"absent_{unique}", "p", {"access_level": "public"}, actor=ACTOR)


async def test_delete_removes_the_policy(
    store: DatabasePolicyProvider, memory: str, unique: str
) -> None:
    project = f"proj-{unique}"
    await store.put("project", memory, project, {"access_level": "public"}, actor=ACTOR)
    assert await store.delete("project", memory, project) is True
    assert await store.delete("project", memory, project) is False
    resource = Resource(ResourceType.PROJECT, project, memory)
    assert (await decide(store, principal(), resource))[1] is Reason.NO_POLICY_DEFAULT_DENY


async def test_a_memory_policy_is_stored_under_that_memory_and_goes_with_it(
    store: DatabasePolicyProvider, memory_service: MemoryService, unique: str
) -> None:
    name = f"pol_{unique}"
    await memory_service.create(name, created_by=ACTOR)
    try:
        await store.put(
            "memory", None, name, {"access_level": "public", "memory": name}, actor=ACTOR
        )
        await store.put("project", name, "p", {"access_level": "public"}, actor=ACTOR)
        assert await decide(store, principal(), Resource.of_memory(name)) == (
            True,
            Reason.ACCESS_LEVEL_PUBLIC,
            "database",
        )
    finally:
        await memory_service.delete(name, confirm=name)
    # A memory re-created under the old name must not inherit the old rules.
    await memory_service.create(name, created_by=ACTOR)
    try:
        assert await store.get("memory", name, name) is None
        assert await store.get("project", name, "p") is None
    finally:
        await memory_service.delete(name, confirm=name)


async def test_a_stored_row_that_no_longer_validates_is_left_out_and_reported(
    store: DatabasePolicyProvider, db: Database, memory: str, unique: str
) -> None:
    project = f"proj-{unique}"
    async with db.shared_transaction() as conn:  # as if edited by hand
        await conn.execute(
            "INSERT INTO public.access_policy (resource_type, memory, name, document, updated_by) "
            "VALUES ('project', $1, $2, $3, $4)",
            memory,
            project,
            {"access_level": "everyone"},
            ACTOR,
        )
    policies = await store.reload()
    mine = [e for e in policies.errors if e.file == f"database:project/{memory}/{project}"]
    assert [(e.field, e.line) for e in mine] == [("access_level", None)]
    resource = Resource(ResourceType.PROJECT, project, memory)
    assert (await decide(store, principal(), resource))[1] is Reason.NO_POLICY_DEFAULT_DENY
    await store.delete("project", memory, project)  # other tests read this table's errors
