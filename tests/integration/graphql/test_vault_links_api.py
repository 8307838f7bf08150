"""vaultStatus and vaultReach through GraphQL, each through the caller's read scope."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graph.links.vault_fixtures import sync
from tests.integration.graphql.conftest import GraphQLCall, error_codes

STATUS = """query($v: String!, $first: Int) { vaultStatus(vault: $v, first: $first) {
  vault notes links resolved dangling ambiguous
  danglingLinks { sourcePath target heading reason matches } } }"""
REACH = """query($v: String!, $p: String!) { vaultReach(vault: $v, project: $p) { path } }"""

FILES = [
    ("projects/poimen/runbook.md", "[[guide]] [[../../shared/hub]] [[missing#Part]]"),
    ("projects/p1/guide.md", "[[hub]] [[dup]]"),
    ("projects/p1/dup.md", "p1"),
    ("projects/p2/dup.md", "p2"),
    ("shared/hub.md", "[[runbook]] [[elsewhere]] [[dup]]"),
]


@pytest.fixture(scope="module")
def people(issuer: LocalIssuer) -> dict[str, str]:
    return {
        "alice": issuer.mint("alice", groups=["data-team"], roles=["viewer"]),
        "charlie": issuer.mint("charlie", groups=["platform-team"], roles=["viewer"]),
    }


async def _data(gql: GraphQLCall, query: str, variables: dict[str, Any], token: str) -> Any:
    body = await gql(query, variables, token=token)
    assert "errors" not in body, body
    return body["data"]


async def test_vault_status_counts_and_lists_only_what_the_caller_may_read(
    gql: GraphQLCall, runtime: Runtime, memory: str, people: dict[str, str]
) -> None:
    await sync(runtime.notes, memory, "h", FILES)
    seen = (await _data(gql, STATUS, {"v": "h"}, people["charlie"]))["vaultStatus"]
    assert {k: seen[k] for k in ("notes", "links", "resolved", "dangling", "ambiguous")} == {
        "notes": 5,
        "links": 8,
        "resolved": 5,
        "dangling": 3,
        "ambiguous": 1,
    }
    assert seen["danglingLinks"] == [
        {"sourcePath": "projects/poimen/runbook.md", "target": "missing", "heading": "Part",
         "reason": "DANGLING", "matches": 0},
        {"sourcePath": "shared/hub.md", "target": "elsewhere", "heading": None,
         "reason": "DANGLING", "matches": 0},
        {"sourcePath": "shared/hub.md", "target": "dup", "heading": None,
         "reason": "AMBIGUOUS", "matches": 2},
    ]  # fmt: skip
    # alice may not read poimen: its note and its links are not counted.
    hers = (await _data(gql, STATUS, {"v": "h"}, people["alice"]))["vaultStatus"]
    assert (hers["notes"], hers["links"], hers["resolved"], hers["dangling"]) == (4, 5, 3, 2)
    assert "projects/poimen/runbook.md" not in {d["sourcePath"] for d in hers["danglingLinks"]}
    capped = (await _data(gql, STATUS, {"v": "h", "first": 1}, people["charlie"]))["vaultStatus"]
    assert len(capped["danglingLinks"]) == 1
    unknown = (await _data(gql, STATUS, {"v": "nope"}, people["charlie"]))["vaultStatus"]
    assert (unknown["notes"], unknown["links"], unknown["danglingLinks"]) == (0, 0, [])


async def test_vault_reach_needs_the_project_and_follows_shared_notes_only(
    gql: GraphQLCall, runtime: Runtime, memory: str, people: dict[str, str]
) -> None:
    await sync(runtime.notes, memory, "h", FILES)
    reach = (await _data(gql, REACH, {"v": "h", "p": "poimen"}, people["charlie"]))["vaultReach"]
    assert [n["path"] for n in reach] == ["projects/poimen/runbook.md", "shared/hub.md"]
    reach = (await _data(gql, REACH, {"v": "h", "p": "p1"}, people["alice"]))["vaultReach"]
    # hub links back into poimen: that never opens poimen.
    assert [n["path"] for n in reach] == [
        "projects/p1/dup.md",
        "projects/p1/guide.md",
        "shared/hub.md",
    ]
    refused = await gql(REACH, {"v": "h", "p": "poimen"}, token=people["alice"])
    assert error_codes(refused) == ["FORBIDDEN"]
    assert refused["errors"][0]["extensions"]["reason"] == "not_in_allowed_groups"
    blank = await gql(REACH, {"v": " ", "p": "p1"}, token=people["alice"])
    assert error_codes(blank) == ["BAD_USER_INPUT"]


async def test_note_links_tell_an_ambiguous_vault_link_and_a_block_apart(
    gql: GraphQLCall, runtime: Runtime, memory: str, people: dict[str, str]
) -> None:
    ids = await sync(
        runtime.notes, memory, "h", [*FILES, ("shared/blocks.md", "[[nowhere#^b1]] [[hub#^b2]]")]
    )
    query = """query($id: ID!) { noteLinks(id: $id) {
      outgoing { note { title } } dangling { target block ambiguous } } }"""
    hub = await _data(gql, query, {"id": str(ids["shared/hub.md"])}, people["alice"])
    assert hub["noteLinks"]["dangling"] == [
        {"target": "elsewhere", "block": None, "ambiguous": False},
        {"target": "dup", "block": None, "ambiguous": True},
    ]
    blocks = await _data(gql, query, {"id": str(ids["shared/blocks.md"])}, people["alice"])
    assert blocks["noteLinks"] == {
        "outgoing": [{"note": {"title": "hub"}}],
        "dangling": [{"target": "nowhere", "block": "b1", "ambiguous": False}],
    }
