"""Files and database together: default.yaml from the files, a file beats a database row."""

from __future__ import annotations

from pathlib import Path

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import (
    AccessDecisionEngine,
    CompositePolicyProvider,
    DatabasePolicyProvider,
    FilePolicyProvider,
    PolicyRef,
)
from fortemi.platform.database import Database
from tests.unit.policy.helpers import principal

ACTOR = "policy-tests"
ENGINE = AccessDecisionEngine()
ALICE = principal("alice", ["data-team"], ["viewer"])


def composite(tree: Path, db: Database) -> CompositePolicyProvider:
    return CompositePolicyProvider(FilePolicyProvider(tree), DatabasePolicyProvider(db))


async def test_a_file_policy_beats_a_database_policy_and_infos_say_so(
    tree: Path, db: Database, memory: str
) -> None:
    provider = composite(tree, db)
    # A database row that would open poimen to everyone in this memory: the file wins.
    stored = await provider.database.put(
        "project", memory, "poimen", {"access_level": "public"}, actor=ACTOR
    )
    policies = await provider.reload()
    decision = ENGINE.decide(
        policies, ALICE, Action.READ, Resource(ResourceType.PROJECT, "poimen", memory)
    )
    assert (decision.allowed, decision.reason) == (False, Reason.NOT_IN_ALLOWED_GROUPS)
    assert decision.policy_source == "file:projects/poimen/_access.yaml"
    (info,) = [i for i in policies.infos() if i.name == "poimen"]
    assert info.source == "file:projects/poimen/_access.yaml"
    assert info.memory is None
    assert info.overrides == (PolicyRef("database", memory, stored.version),)


async def test_database_policies_fill_in_where_there_is_no_file(
    tree: Path, db: Database, memory: str, unique: str
) -> None:
    provider = composite(tree, db)
    project = f"proj-{unique}"
    await provider.database.put("project", memory, project, {"access_level": "public"}, actor=ACTOR)
    policies = await provider.reload()
    resource = Resource(ResourceType.PROJECT, project, memory)
    decision = ENGINE.decide(policies, ALICE, Action.READ, resource)
    assert (decision.allowed, decision.policy_source) == (True, "database")
    (info,) = [i for i in policies.infos() if i.name == project]
    assert (info.source, info.memory, info.overrides) == ("database", memory, ())
    # default.yaml comes from the files: the audit log is still auditors-only.
    assert not ENGINE.decide(
        policies, principal(roles=["admin"]), Action.READ, Resource.audit()
    ).allowed


async def test_the_errors_of_both_sources_are_reported_together(
    tree: Path, db: Database, memory: str, unique: str
) -> None:
    (tree / "projects" / "poimen" / "_access.yaml").write_text("project: poimen\naccess_level: x\n")
    project = f"proj-{unique}"
    async with db.shared_transaction() as conn:
        await conn.execute(
            "INSERT INTO public.access_policy (resource_type, memory, name, document, updated_by) "
            "VALUES ('project', $1, $2, '{\"access_level\": 1}', $3)",
            memory,
            project,
            ACTOR,
        )
    provider = composite(tree, db)
    try:
        errors = (await provider.snapshot()).errors
    finally:
        await provider.database.delete("project", memory, project)
    files = [e.file for e in errors]
    assert str(tree / "projects" / "poimen" / "_access.yaml") in files
    assert f"database:project/{memory}/{project}" in files


async def test_the_merge_is_reused_until_a_source_changes(tree: Path, db: Database) -> None:
    provider = composite(tree, db)
    first = await provider.snapshot()
    assert await provider.snapshot() is first
    (tree / "projects" / "poimen" / "_access.yaml").write_text(
        "project: poimen\naccess_level: public\n"
    )
    await provider.file.reload()
    changed = await provider.snapshot()
    assert changed is not first
    assert changed.version != first.version
