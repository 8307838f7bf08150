"""What a vault sync says about the access files it applies: policies that let no one
write, policies a server file overrides, skill policies shared by every memory; and the
advice on the next sync that such a policy refuses."""

from __future__ import annotations

from typing import Any

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall
from tests.integration.graphql.vaults.conftest import HOMELAB
from tests.integration.graphql.vaults.test_sync_api import outcomes, sync, vault_files

EDITED = "projects/rust-guide/memories/ownership.md"


def _warnings(payload: dict[str, Any], reason: str) -> dict[str, str]:
    return {p["path"]: p["message"] for p in payload["problems"] if p["reason"] == reason}


async def test_a_policy_without_write_actions_is_reported_and_the_refused_resync_says_how_to_fix_it(
    gql: GraphQLCall, syncer: str, homelab_memory: str, runtime: Runtime, issuer: LocalIssuer
) -> None:
    files = vault_files(HOMELAB)
    first = await sync(gql, syncer, files=files, complete=True)

    closes = _warnings(first, "policy_closes_writes")
    # rust-guide, ai-infra and SKILL-testing: their files only say who reads.
    assert set(closes) == {
        "projects/rust-guide/_access.yaml",
        "projects/ai-infra/_access.yaml",
        "shared/skills/SKILL-testing/_access.yaml",
    }
    message = closes["projects/rust-guide/_access.yaml"]
    assert "only the memory's admins may write or delete the notes of project rust-guide" in message
    assert "actions: {write: {required_role: editor}, delete: {required_role: editor}}" in message
    # Never widened: stored as written.
    stored = await runtime.policies.get("project", homelab_memory, "rust-guide")
    assert stored is not None
    assert "actions" not in stored.document

    for file in files:
        if file["path"] == EDITED:
            file["content"] += "\nOne more paragraph.\n"
    # An editor in every team, who does not administer the memory: refused, with the fix.
    editor = issuer.mint("vault-editor", groups=["platform-team", "devops-team", "ml-team"],
                         roles=["editor"], permissions=["skill:read", "skill:write"])  # fmt: skip
    again = await sync(gql, editor, files=files, complete=True)

    [refused] = [r for r in again["results"] if r["path"] == EDITED]
    assert (refused["outcome"], refused["reason"]) == ("SKIPPED", "forbidden")
    assert "(action_not_in_policy): its policy states no write action" in refused["message"]
    assert (
        "add `actions: {write: {required_role: editor}}` to the vault's "
        "projects/rust-guide/_access.yaml" in refused["message"]
    )
    assert again["errors"] == 1
    assert outcomes(again)["projects/rust-guide/index.md"] == "UNCHANGED"
    # The memory's admin imports it: the policy is not widened, the sync is theirs.
    admins = await sync(gql, syncer, files=files, complete=True)
    assert outcomes(admins)[EDITED] == "UPDATED"
    assert admins["errors"] == 0


async def test_a_policy_with_write_actions_draws_no_warning_and_lets_the_next_sync_write(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    policy = (HOMELAB / "projects/rust-guide/_access.yaml").read_text()
    policy += "actions:\n  write: {required_role: editor}\n  delete: {required_role: editor}\n"
    files = [
        {"path": "projects/rust-guide/_access.yaml", "content": policy},
        {"path": EDITED, "content": "# Ownership\n"},
    ]
    first = await sync(gql, syncer, files=files)

    assert _warnings(first, "policy_closes_writes") == {}
    files[1]["content"] += "Changed.\n"
    again = await sync(gql, syncer, files=files)
    assert outcomes(again)[EDITED] == "UPDATED"


async def test_overridden_and_shared_skill_policies_are_named_in_the_report(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    payload = await sync(gql, syncer, files=vault_files(HOMELAB), complete=True)

    # The suite's server keeps policy files for poimen and two skills: those decide.
    overridden = _warnings(payload, "policy_overridden")
    assert set(overridden) == {
        "projects/poimen/_access.yaml",
        "shared/skills/SKILL-kubernetes-debugging/_access.yaml",
        "shared/skills/SKILL-private-debug/_access.yaml",
    }
    assert (
        "projects/poimen/_access.yaml decides project poimen"
        in (overridden["projects/poimen/_access.yaml"])
    )
    shared = _warnings(payload, "skill_policy_shared")
    assert set(shared) == {
        f"shared/skills/{skill}/_access.yaml"
        for skill in ("SKILL-kubernetes-debugging", "SKILL-private-debug", "SKILL-testing")
    }
    assert (
        "applies to skill SKILL-testing in every memory"
        in (shared["shared/skills/SKILL-testing/_access.yaml"])
    )
    # Applied once: a re-sync that stores nothing says nothing of sharing.
    again = await sync(gql, syncer, files=vault_files(HOMELAB), complete=True)
    assert _warnings(again, "skill_policy_shared") == {}
