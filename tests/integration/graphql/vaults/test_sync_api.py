"""syncVaultFiles over GraphQL: the homelab fixture vault and Foam's docs as their READMEs
describe them, re-syncs that change nothing, pruning, bad files and policy files."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from fortemi.auth.decision import Action, Resource, ResourceType
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.auth.policy import AccessDecisionEngine
from fortemi.auth.principal import Principal
from fortemi.runtime import Runtime
from fortemi.wiki.vaults import VaultProblem, scan
from tests.integration.graphql.conftest import GraphQLCall, error_codes
from tests.integration.graphql.vaults.conftest import FOAM, HOMELAB, SKILLS

SYNC = """
mutation($i: SyncVaultFilesInput!) {
  syncVaultFiles(input: $i) {
    vault dryRun created updated restored unchanged deleted skipped errors
    policiesApplied policiesUnchanged policiesSkipped
    results { path kind outcome reason message note { id path version } }
    problems { path reason message line field severity }
  }
}
"""
NOTES = """
query($f: NoteFilter, $after: String) {
  notes(filter: $f, first: 100, after: $after) {
    edges { node { id path title tags project skill metadata externalSource externalId
                   version updatedAt deleted } }
    pageInfo { hasNextPage endCursor }
  }
}
"""


def vault_files(root: Path) -> list[dict[str, Any]]:
    files = []
    for path, data in scan(root, max_bytes=1 << 20):
        assert not isinstance(data, VaultProblem)
        files.append({"path": path, "content": data.decode()})
    return files


async def sync(gql: GraphQLCall, token: str, **input: Any) -> dict[str, Any]:
    body = await gql(SYNC, {"i": {"vault": "homelab", **input}}, token=token)
    assert "errors" not in body, body
    payload: dict[str, Any] = body["data"]["syncVaultFiles"]
    return payload


async def notes_of(
    gql: GraphQLCall, token: str, source: str, *, deleted: bool = False
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    after = None
    while True:
        body = await gql(
            NOTES, {"f": {"source": source, "deleted": deleted}, "after": after}, token=token
        )
        assert "errors" not in body, body
        page = body["data"]["notes"]
        for edge in page["edges"]:
            found[edge["node"]["externalId"]] = edge["node"]
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


def person(sub: str, groups: list[str], roles: list[str], permissions: list[str]) -> Principal:
    return Principal(
        sub,
        frozenset(groups),
        frozenset(roles),
        frozenset(permissions),
        issuer="test",
        client_id=None,
        token_id=None,
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )


def outcomes(payload: dict[str, Any]) -> dict[str, str]:
    return {r["path"]: r["outcome"] for r in payload["results"]}


async def test_homelab_sync_makes_every_note_with_its_path_title_aliases_tags_and_owner(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    payload = await sync(gql, syncer, files=vault_files(HOMELAB), complete=True)

    assert (payload["created"], payload["errors"], payload["skipped"]) == (11, 0, 0)
    assert payload["policiesApplied"] == 6
    [default] = [p for p in payload["problems"] if p["path"] == "policies/default.yaml"]
    assert (default["reason"], default["severity"]) == ("default_policy_not_applied", "warning")
    notes = await notes_of(gql, syncer, "vault:homelab")
    assert len(notes) == 11
    kubectl = notes["projects/poimen/tools/kubectl.md"]
    assert kubectl["path"] == "projects/poimen/tools/kubectl.md"
    assert kubectl["title"] == "kubectl on poimen"
    assert kubectl["metadata"] == {
        "path": "projects/poimen/tools/kubectl.md",
        "vault": "homelab",
        "aliases": ["kubectl field guide", "kubectl cheat sheet"],
    }
    assert kubectl["tags"] == ["kubernetes", "poimen"]
    assert notes["projects/rust-guide/memories/ownership.md"]["metadata"]["aliases"] == [
        "Rust ownership",
        "borrow checker",
    ]
    skill = notes["shared/skills/SKILL-kubernetes-debugging/SKILL.md"]
    assert skill["metadata"]["aliases"] == [
        "k8s debugging checklist",
        "debugging a Kubernetes workload",
    ]
    assert (skill["project"], skill["skill"]) == (None, "SKILL-kubernetes-debugging")
    # Inline tags; the `#` of [[pod-crashes#...]] and code comments are not tags.
    assert notes["projects/poimen/debugging/pod-crashes.md"]["tags"] == [
        "kubernetes",
        "troubleshooting",
    ]
    assert notes["projects/ai-infra/index.md"]["tags"] == ["gpu"]
    owners = {path: (n["project"], n["skill"]) for path, n in notes.items()}
    assert owners["shared/concepts/design-patterns.md"] == (None, None)
    assert owners["projects/poimen/memories/ownership.md"] == ("poimen", None)
    assert owners["projects/rust-guide/memories/ownership.md"] == ("rust-guide", None)
    assert owners["shared/skills/SKILL-private-debug/SKILL.md"] == (None, "SKILL-private-debug")
    # No front matter title: the first heading.
    assert notes["projects/ai-infra/index.md"]["title"] == "ai-infra"


async def test_homelab_policies_are_stored_as_written_and_decide_the_readme_scenarios(
    gql: GraphQLCall, syncer: str, homelab_memory: str, runtime: Runtime
) -> None:
    await sync(gql, syncer, files=vault_files(HOMELAB), complete=True)

    for project in ("poimen", "rust-guide", "ai-infra"):
        written = yaml.safe_load((HOMELAB / "projects" / project / "_access.yaml").read_text())
        stored = await runtime.policies.get("project", homelab_memory, project)
        assert stored is not None
        assert stored.document == written
    for skill in SKILLS:
        written = yaml.safe_load((HOMELAB / "shared/skills" / skill / "_access.yaml").read_text())
        stored = await runtime.policies.get("skill", None, skill)
        assert stored is not None
        assert stored.document == written
    people = {
        "charlie": person("charlie", ["platform-team", "devops-team"], ["viewer"], ["skill:read"]),
        "alice": person("alice", ["data-team"], ["viewer"], ["memory:read"]),
        "bob": person("bob", ["ml-team"], ["editor"], []),
    }
    expected = {  # the README's table, for the resources only the vault's policies govern
        ("project", "poimen"): (
            "in_allowed_group",
            "not_in_allowed_groups",
            "not_in_allowed_groups",
        ),
        ("project", "rust-guide"): ("access_level_public",) * 3,
        ("project", "ai-infra"): ("access_level_public",) * 3,
        ("skill", "SKILL-testing"): ("access_level_public",) * 3,
    }
    policies = await runtime.policies.snapshot()
    engine = AccessDecisionEngine()
    for (kind, name), reasons in expected.items():
        resource = Resource(ResourceType(kind), name, homelab_memory)
        got = tuple(
            engine.decide(policies, people[who], Action.READ, resource).reason.value
            for who in ("charlie", "alice", "bob")
        )
        assert got == reasons, (kind, name)


async def test_resyncing_an_unchanged_vault_changes_nothing(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    files = vault_files(HOMELAB)
    await sync(gql, syncer, files=files, complete=True)
    before = await notes_of(gql, syncer, "vault:homelab")

    again = await sync(gql, syncer, files=files, complete=True)

    assert (again["created"], again["updated"], again["deleted"], again["errors"]) == (0, 0, 0, 0)
    assert again["unchanged"] == 11
    assert (again["policiesApplied"], again["policiesUnchanged"]) == (0, 6)
    after = await notes_of(gql, syncer, "vault:homelab")
    assert after == before
    assert {n["version"] for n in after.values()} == {1}


async def test_a_removed_file_soft_deletes_its_note_only_and_coming_back_restores_it(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    manual = await gql(
        'mutation { createNote(input: {title: "manual", project: "poimen"}) { id } }',
        token=syncer,
    )
    assert "errors" not in manual, manual
    files = vault_files(HOMELAB)
    await sync(gql, syncer, files=files, complete=True)
    # The same path in another vault, and a note of another source: never touched.
    other = await gql(
        SYNC,
        {"i": {"vault": "other", "files": [{"path": "root.md", "content": "# Other\n"}]}},
        token=syncer,
    )
    assert other["data"]["syncVaultFiles"]["created"] == 1
    gone = "projects/poimen/memories/ownership.md"

    pruned = await sync(gql, syncer, files=[f for f in files if f["path"] != gone], complete=True)

    assert outcomes(pruned)[gone] == "DELETED"
    assert (pruned["deleted"], pruned["unchanged"]) == (1, 10)
    assert gone not in await notes_of(gql, syncer, "vault:homelab")
    assert set(await notes_of(gql, syncer, "vault:homelab", deleted=True)) == {gone}
    assert set(await notes_of(gql, syncer, "vault:other")) == {"root.md"}
    live = await gql('{ notes(filter: {project: "poimen"}) { totalCount } }', token=syncer)
    assert live["data"]["notes"]["totalCount"] == 4  # three vault notes and the manual one

    back = await sync(gql, syncer, files=files, complete=True)

    assert outcomes(back)[gone] == "RESTORED"
    assert gone in await notes_of(gql, syncer, "vault:homelab")


async def test_batches_prune_only_the_range_of_paths_they_cover(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    def note(path: str) -> dict[str, str]:
        return {"path": path, "content": f"# {path}\n"}

    await sync(
        gql, syncer, files=[note(p) for p in ("a.md", "b.md", "c.md", "d.md")], complete=True
    )

    # The vault lost b.md and d.md; two batches, each saying which paths it covers.
    first = await sync(gql, syncer, files=[note("a.md")], covers={"through": "b.md"})
    assert outcomes(first) == {"a.md": "UNCHANGED", "b.md": "DELETED"}
    last = await sync(gql, syncer, files=[note("c.md")], covers={"after": "b.md"})
    assert outcomes(last) == {"c.md": "UNCHANGED", "d.md": "DELETED"}
    # Without a range nothing is pruned.
    plain = await sync(gql, syncer, files=[note("a.md")])
    assert outcomes(plain) == {"a.md": "UNCHANGED"}
    assert set(await notes_of(gql, syncer, "vault:homelab")) == {"a.md", "c.md"}


async def test_files_that_cannot_be_synced_are_reported_and_the_rest_of_the_batch_syncs(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    def raw(path: str, data: bytes) -> dict[str, str]:
        return {"path": path, "contentBase64": base64.b64encode(data).decode()}

    files = [
        {"path": "good.md", "content": "# Good\n"},
        raw("image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
        raw("latin1.md", b"caf\xe9\n"),
        {"path": "huge.md", "content": "x" * (1_048_576 + 1)},
        {"path": "broken.md", "content": "---\ntitle: [unclosed\n---\nbody\n"},
        {"path": "../escape.md", "content": "x"},
        {"path": "/etc/passwd.md", "content": "x"},
        {"path": "win\\dows.md", "content": "x"},
        {"path": "nul\u0000.md", "content": "x"},
        {"path": ".obsidian/workspace.md", "content": "x"},
        {
            "path": "projects/p1/_access.yaml",
            "content": "version: 1\nproject: p1\naccess_level: public\nallowed_groups: team\n",
        },
        {"path": "picture.png", "content": "x"},
        {"path": "unsent.md"},
    ]

    payload = await sync(gql, syncer, files=files, complete=True)

    reasons = {p["path"]: p["reason"] for p in payload["problems"]}
    assert reasons == {
        "image.md": "binary",
        "latin1.md": "not_utf8",
        "huge.md": "too_large",
        "broken.md": "bad_front_matter",
        "../escape.md": "bad_path",
        "/etc/passwd.md": "bad_path",
        "win\\dows.md": "bad_path",
        "nul\u0000.md": "bad_path",
        ".obsidian/workspace.md": "bad_path",
        "projects/p1/_access.yaml": "bad_policy",
        "picture.png": "not_a_note",
    }
    policy = next(p for p in payload["problems"] if p["path"] == "projects/p1/_access.yaml")
    assert (policy["line"], policy["field"]) == (4, "allowed_groups")
    assert payload["created"] == 1
    assert set(await notes_of(gql, syncer, "vault:homelab")) == {"good.md"}
    assert payload["errors"] == 10  # every problem but the ignored picture


async def test_a_file_that_turns_bad_keeps_its_note_rather_than_losing_it(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    await sync(gql, syncer, files=[{"path": "a.md", "content": "# A\n"}], complete=True)

    payload = await sync(
        gql, syncer, files=[{"path": "a.md", "content": "---\n: [\n---\n"}], complete=True
    )

    assert outcomes(payload) == {"a.md": "SKIPPED"}
    assert set(await notes_of(gql, syncer, "vault:homelab")) == {"a.md"}


async def test_policy_files_are_skipped_for_a_caller_who_may_not_administer_policies(
    gql: GraphQLCall, memory: str, runtime: Runtime
) -> None:
    files = [
        {
            "path": "projects/p1/_access.yaml",
            "content": "version: 1\nproject: p1\naccess_level: public\n",
        },
        {"path": "projects/p1/a.md", "content": "# A\n"},
    ]

    payload = await sync(gql, _editor_token(runtime), files=files)  # alice-like editor

    assert outcomes(payload) == {
        "projects/p1/_access.yaml": "SKIPPED",
        "projects/p1/a.md": "CREATED",
    }
    assert payload["policiesSkipped"] == 1
    [problem] = payload["problems"]
    assert problem["reason"] == "policy_not_applied"
    assert "role_requirement_failed" in problem["message"]
    stored = await runtime.policies.get("project", memory, "p1")
    assert stored is not None
    assert stored.document.get("access_level") == "public"
    assert "actions" in stored.document  # still the test's policy, not the vault's


async def test_every_access_decision_of_a_sync_is_in_the_audit_log(
    gql: GraphQLCall, memory: str, issuer: LocalIssuer
) -> None:
    erin = issuer.mint("erin-audited", groups=["data-team"], roles=["editor"])
    files = [
        {
            "path": "projects/p1/_access.yaml",
            "content": "version: 1\nproject: p1\naccess_level: public\n",
        },
        {"path": "projects/p1/a.md", "content": "# A\n"},
    ]
    await sync(gql, erin, files=files)

    body = await gql(
        """{ auditLog(filter: {userId: "erin-audited"}, first: 20)
             { edges { node { resourceType resourceName action decision reason } } } }""",
        token=issuer.mint("ivy", roles=["auditor"]),
    )

    entries = {
        (n["resourceType"], n["resourceName"], n["action"], n["decision"], n["reason"])
        for n in (e["node"] for e in body["data"]["auditLog"]["edges"])
    }
    assert ("project", "p1", "write", "allow", "access_level_public") in entries
    assert ("system", None, "admin", "deny", "role_requirement_failed") in entries


def _editor_token(runtime: Runtime) -> str:
    assert runtime.issuer is not None
    return runtime.issuer.mint("erin", groups=["data-team"], roles=["editor"])


async def test_notes_of_a_project_the_caller_may_not_write_are_skipped_with_the_reason(
    gql: GraphQLCall, memory: str, runtime: Runtime
) -> None:
    viewer = runtime.issuer.mint("vic", roles=["viewer"]) if runtime.issuer else ""
    files = [{"path": "projects/p1/a.md", "content": "# A\n"}]

    payload = await sync(gql, viewer, files=files)

    [result] = payload["results"]
    assert (result["outcome"], result["reason"]) == ("SKIPPED", "forbidden")
    assert "role_requirement_failed" in result["message"]
    # The reason code says "forbidden" already; the message says what was refused.
    assert result["message"] == "you may not write p1 (role_requirement_failed)"
    assert payload["errors"] == 1


async def test_policy_files_without_version_or_with_owner_are_applied_with_a_warning(
    gql: GraphQLCall, syncer: str, memory: str, runtime: Runtime
) -> None:
    files = [
        {
            "path": "projects/p2/_access.yaml",
            "content": "project: p2\nowner: ml-team\naccess_level: private\n",
        }
    ]

    payload = await sync(gql, syncer, files=files)

    assert payload["policiesApplied"] == 1
    warnings = {(p["reason"], p["severity"], p["path"]) for p in payload["problems"]}
    assert warnings == {
        ("policy_without_version", "warning", "projects/p2/_access.yaml"),
        ("policy_owner_renamed", "warning", "projects/p2/_access.yaml"),
        ("policy_closes_writes", "warning", "projects/p2/_access.yaml"),  # no actions
    }
    stored = await runtime.policies.get("project", memory, "p2")
    assert stored is not None
    assert stored.policy.owner_group == "ml-team"
    assert stored.policy.access_level.value == "private"


async def test_a_dry_run_reports_what_would_happen_and_writes_nothing(
    gql: GraphQLCall, syncer: str, homelab_memory: str, runtime: Runtime
) -> None:
    payload = await sync(gql, syncer, files=vault_files(HOMELAB), complete=True, dryRun=True)

    assert (payload["dryRun"], payload["created"], payload["policiesApplied"]) == (True, 11, 6)
    assert await notes_of(gql, syncer, "vault:homelab") == {}
    stored = await runtime.policies.get("project", homelab_memory, "rust-guide")
    assert stored is not None
    assert "actions" in stored.document  # the test's, unchanged


async def test_the_foam_docs_vault_syncs_with_no_problem(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    files = vault_files(FOAM)

    payload = await sync(gql, syncer, files=files, complete=True)

    assert len(files) == 86
    assert (payload["created"], payload["problems"]) == (86, [])
    notes = await notes_of(gql, syncer, "vault:homelab")
    assert notes["user/features/tags.md"]["tags"] == ["book"]


async def test_a_dendron_vault_marks_its_notes_flavour(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    payload = await sync(gql, syncer, files=[{"path": "a.b.md", "content": "x"}], flavour="DENDRON")

    [result] = payload["results"]
    notes = await notes_of(gql, syncer, "vault:homelab")
    assert notes["a.b.md"]["metadata"]["flavour"] == "dendron"
    assert result["note"]["path"] == "a.b.md"


async def test_a_note_from_no_vault_has_no_path(gql: GraphQLCall, syncer: str) -> None:
    body = await gql(
        'mutation { createNote(input: {title: "t", metadata: {path: "x.md"}}) { path } }',
        token=syncer,
    )

    assert body["data"]["createNote"] == {"path": None}


@pytest.mark.parametrize(
    ("input", "field"),
    [
        ({"vault": "../x", "files": []}, "vault"),
        ({"vault": "v", "files": [], "complete": True, "covers": {}}, "covers"),
        ({"vault": "v", "files": [{"path": "a.md", "content": "", "contentBase64": ""}]}, "files"),
        ({"vault": "v", "files": [{"path": "a.md", "contentBase64": "!!"}]}, "files"),
    ],
)
async def test_bad_input_is_refused_naming_the_field(
    gql: GraphQLCall, syncer: str, input: dict[str, Any], field: str
) -> None:
    body = await gql(SYNC, {"i": input}, token=syncer)

    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert body["errors"][0]["extensions"]["field"] == field


LINKS = """mutation($i: SyncVaultFilesInput!) {
  syncVaultFiles(input: $i) { links { links resolved dangling ambiguous } } }"""


async def _links(gql: GraphQLCall, token: str, **input: Any) -> Any:
    body = await gql(LINKS, {"i": {"vault": "homelab", **input}}, token=token)
    assert "errors" not in body, body
    return body["data"]["syncVaultFiles"]["links"]


async def test_the_sync_result_counts_the_vaults_links_as_vault_status_does(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    status = 'query { vaultStatus(vault: "homelab") { links resolved dangling ambiguous } }'

    dry = await _links(gql, syncer, files=vault_files(HOMELAB), complete=True, dryRun=True)
    synced = await _links(gql, syncer, files=vault_files(HOMELAB), complete=True)

    assert dry is None  # nothing was written, so nothing was resolved
    # The fixture's README: 11 links outside code, and every one resolves.
    assert synced == {"links": 11, "resolved": 11, "dangling": 0, "ambiguous": 0}
    after = await gql(status, token=syncer)
    assert after["data"]["vaultStatus"] == synced
    # A later batch reports the whole vault's links once it is written: removing the
    # target of L8 leaves that link dangling.
    removed = await _links(
        gql,
        syncer,
        files=[],
        covers={"after": "shared/concepts/", "through": "shared/concepts/design-patterns.md"},
    )
    assert removed == {"links": 11, "resolved": 10, "dangling": 1, "ambiguous": 0}


async def test_a_file_removed_by_a_sync_leaves_its_links_dangling_until_it_comes_back(
    gql: GraphQLCall, syncer: str, homelab_memory: str
) -> None:
    status = 'query { vaultStatus(vault: "links") { resolved dangling } }'
    files = [
        {"path": "shared/a.md", "content": "# A\n\nSee [[b]].\n"},
        {"path": "shared/b.md", "content": "# B\n"},
    ]
    await sync(gql, syncer, vault="links", files=files, complete=True)
    linked = await gql(status, token=syncer)
    assert linked["data"]["vaultStatus"] == {"resolved": 1, "dangling": 0}

    removed = await sync(gql, syncer, vault="links", files=files[:1], complete=True)
    assert removed["deleted"] == 1
    dangling = await gql(status, token=syncer)
    assert dangling["data"]["vaultStatus"] == {"resolved": 0, "dangling": 1}

    back = await sync(gql, syncer, vault="links", files=files, complete=True)
    assert back["restored"] == 1
    relinked = await gql(status, token=syncer)
    assert relinked["data"]["vaultStatus"] == {"resolved": 1, "dangling": 0}


DENDRON_SYNC = """mutation($i: SyncVaultFilesInput!) {
  syncVaultFiles(input: $i) {
    results { path outcome note { metadata } }
    problems { path reason severity message }
    links { links resolved dangling }
  } }"""
# A small Dendron vault: dot-hierarchy names, [[label|target]] and a dendron:// prefix.
DENDRON_FIRST = [
    {"path": "dendron.yml", "content": "version: 5\nworkspace:\n  vaults:\n    - fsPath: .\n"},
    {
        "path": "root.md",
        "content": "# Root\n\nSee [[the kubectl notes|tools.kubectl]] and "
        "[[dendron://notes/tools.git]].\n",
    },
    {"path": "tools.md", "content": "# Tools\n"},
]
DENDRON_SECOND = [
    {"path": "tools.git.md", "content": "# git\n"},
    {"path": "tools.kubectl.md", "content": "# kubectl\n\nBack [[home|root]].\n"},
]


async def _dendron(gql: GraphQLCall, token: str, **input: Any) -> dict[str, Any]:
    body = await gql(DENDRON_SYNC, {"i": {"vault": "notes", **input}}, token=token)
    assert "errors" not in body, body
    payload: dict[str, Any] = body["data"]["syncVaultFiles"]
    return payload


def _flavours(payload: dict[str, Any]) -> dict[str, str | None]:
    return {r["path"]: r["note"]["metadata"].get("flavour") for r in payload["results"]}


async def test_a_batch_holding_dendron_yml_is_dendron_and_later_batches_inherit_it(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    first = await _dendron(gql, syncer, files=DENDRON_FIRST)
    second = await _dendron(gql, syncer, files=DENDRON_SECOND)

    # dendron.yml decided the flavour: it is no note and no problem.
    assert _flavours(first) == {"root.md": "dendron", "tools.md": "dendron"}
    assert first["problems"] == []
    # The second batch says nothing of its flavour: the vault's stored notes do.
    assert _flavours(second) == {"tools.git.md": "dendron", "tools.kubectl.md": "dendron"}
    # Read the Dendron way, every link finds its note once both batches are in (under
    # Obsidian's rules "the kubectl notes" and "home" would be the targets, and dangle).
    assert second["links"] == {"links": 3, "resolved": 3, "dangling": 0}


async def test_an_explicit_flavour_wins_over_the_vaults_with_a_warning(
    gql: GraphQLCall, syncer: str, memory: str
) -> None:
    await _dendron(gql, syncer, files=DENDRON_FIRST + DENDRON_SECOND)

    obsidian = await _dendron(gql, syncer, files=DENDRON_SECOND, flavour="OBSIDIAN")

    # Both notes change: the flavour they record is part of them.
    assert _flavours(obsidian) == {"tools.git.md": None, "tools.kubectl.md": None}
    assert {r["outcome"] for r in obsidian["results"]} == {"UPDATED"}
    [warning] = obsidian["problems"]
    assert (warning["reason"], warning["severity"]) == ("flavour_changed", "warning")
    assert "synced as Dendron" in warning["message"]
    # Obsidian's order: "home" is the target now, and names no note.
    assert obsidian["links"] == {"links": 3, "resolved": 2, "dangling": 1}
