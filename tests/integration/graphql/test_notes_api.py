"""Notes through GraphQL: the contract's names and shapes, versions, upserts, pagination."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.integration.graphql.conftest import GraphQLCall, error_codes

NOTE_FIELDS = (
    "id title content format source metadata tags project starred archived deleted version "
    "contentHash createdAt updatedAt"
)


async def create(gql: GraphQLCall, **fields: Any) -> dict[str, Any]:
    body = await gql(
        f"mutation($i: CreateNoteInput!) {{ createNote(input: $i) {{ {NOTE_FIELDS} }} }}",
        {"i": fields},
    )
    assert "errors" not in body, body
    note: dict[str, Any] = body["data"]["createNote"]
    return note


async def test_create_then_read_returns_every_contract_field(gql: GraphQLCall) -> None:
    note = await create(
        gql,
        title="Runbook",
        content="# Restart\nsteps",
        source="manual",
        metadata={"owner": "ops", "n": 1},
        tags=["ops", "runbook"],
        project="p1",
        starred=True,
    )
    assert note["version"] == 1
    assert note["contentHash"].startswith("blake3:")
    assert note["deleted"] is False
    read = await gql(f"query($id: ID!) {{ note(id: $id) {{ {NOTE_FIELDS} }} }}", {"id": note["id"]})
    assert read["data"]["note"] == note


async def test_update_keeps_the_previous_content_as_a_version_and_diff_shows_it(
    gql: GraphQLCall,
) -> None:
    note = await create(gql, title="T", content="line one\n")
    updated = await gql(
        'mutation($id: ID!) { updateNote(id: $id, input: {content: "line two\\n"}) { version content } }',
        {"id": note["id"]},
    )
    assert updated["data"]["updateNote"] == {"version": 2, "content": "line two\n"}
    versions = await gql(
        "query($id: ID!) { noteVersions(id: $id) { version content contentHash } }",
        {"id": note["id"]},
    )
    assert [(v["version"], v["content"]) for v in versions["data"]["noteVersions"]] == [
        (1, "line one\n"),
        (2, "line two\n"),
    ]
    assert versions["data"]["noteVersions"][0]["contentHash"] == note["contentHash"]
    diff = await gql(
        "query($id: ID!) { noteDiff(id: $id, fromVersion: 1, toVersion: 2) { unified additions deletions } }",
        {"id": note["id"]},
    )
    assert diff["data"]["noteDiff"]["additions"] == 1
    assert diff["data"]["noteDiff"]["deletions"] == 1
    assert "-line one" in diff["data"]["noteDiff"]["unified"]
    restored = await gql(
        "mutation($id: ID!) { restoreNoteVersion(id: $id, version: 1) { version content } }",
        {"id": note["id"]},
    )
    assert restored["data"]["restoreNoteVersion"] == {"version": 3, "content": "line one\n"}


async def test_stale_expected_version_is_a_conflict(gql: GraphQLCall) -> None:
    note = await create(gql, content="a")
    query = (
        "mutation($id: ID!, $c: String!) { updateNote(id: $id, "
        "input: {content: $c, expectedVersion: 1}) { version } }"
    )
    first = await gql(query, {"id": note["id"], "c": "b"})
    assert first["data"]["updateNote"]["version"] == 2
    second = await gql(query, {"id": note["id"], "c": "c"})
    assert error_codes(second) == ["CONFLICT"]


async def test_concurrent_updates_with_one_expected_version_let_exactly_one_win(
    gql: GraphQLCall,
) -> None:
    note = await create(gql, content="start")
    query = (
        "mutation($id: ID!, $c: String!) { updateNote(id: $id, "
        "input: {content: $c, expectedVersion: 1}) { version } }"
    )
    results = await asyncio.gather(
        *(gql(query, {"id": note["id"], "c": f"v{i}"}) for i in range(4))
    )
    winners = [r for r in results if "errors" not in r]
    assert len(winners) == 1
    assert sorted(code for r in results for code in error_codes(r)) == ["CONFLICT"] * 3


async def test_soft_delete_restore_and_purge(gql: GraphQLCall) -> None:
    note = await create(gql, title="doomed")
    deleted = await gql(
        "mutation($id: ID!) { deleteNote(id: $id) { deleted } }", {"id": note["id"]}
    )
    assert deleted["data"]["deleteNote"]["deleted"] is True
    live = await gql("{ notes { totalCount } }")
    assert live["data"]["notes"]["totalCount"] == 0
    trash = await gql("{ notes(filter: {deleted: true}) { totalCount } }")
    assert trash["data"]["notes"]["totalCount"] == 1
    restored = await gql(
        "mutation($id: ID!) { restoreNote(id: $id) { deleted } }", {"id": note["id"]}
    )
    assert restored["data"]["restoreNote"]["deleted"] is False
    refused = await gql("mutation($id: ID!) { purgeNote(id: $id) }", {"id": note["id"]})
    assert error_codes(refused) == ["CONFLICT"]
    await gql("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": note["id"]})
    purged = await gql("mutation($id: ID!) { purgeNote(id: $id) }", {"id": note["id"]})
    assert purged["data"]["purgeNote"] is True
    gone = await gql("query($id: ID!) { note(id: $id) { id } }", {"id": note["id"]})
    assert gone["data"]["note"] is None


async def test_pagination_walks_every_note_once_newest_first(gql: GraphQLCall) -> None:
    for i in range(7):
        await create(gql, title=f"n{i}")
    seen: list[str] = []
    after = None
    while True:
        page = await gql(
            "query($after: String) { notes(first: 3, after: $after) { totalCount "
            "edges { cursor node { title } } pageInfo { hasNextPage endCursor } } }",
            {"after": after},
        )
        connection = page["data"]["notes"]
        assert connection["totalCount"] == 7
        seen += [e["node"]["title"] for e in connection["edges"]]
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    assert seen == [f"n{i}" for i in reversed(range(7))]


async def test_forged_cursor_is_bad_user_input(gql: GraphQLCall) -> None:
    body = await gql('{ notes(after: "Zm9yZ2Vk") { totalCount } }')
    assert error_codes(body) == ["BAD_USER_INPUT"]


async def test_filters_by_tag_project_and_starred(gql: GraphQLCall) -> None:
    await create(gql, title="a", tags=["x", "y"], project="p1", starred=True)
    await create(gql, title="b", tags=["x"], project="p2")
    await create(gql, title="c", tags=["z"])

    async def titles(filter_: dict[str, Any]) -> list[str]:
        body = await gql(
            "query($f: NoteFilter) { notes(filter: $f) { edges { node { title } } } }",
            {"f": filter_},
        )
        return sorted(e["node"]["title"] for e in body["data"]["notes"]["edges"])

    assert await titles({"tags": ["x", "y"]}) == ["a"]
    assert await titles({"anyTags": ["y", "z"]}) == ["a", "c"]
    assert await titles({"project": "p2"}) == ["b"]
    assert await titles({"starred": True}) == ["a"]


async def test_upsert_external_notes_reports_each_outcome(gql: GraphQLCall) -> None:
    mutation = (
        "mutation($i: UpsertExternalNotesInput!) { upsertExternalNotes(input: $i) { "
        "created updated unchanged conflicts results { externalId outcome note { title version } } } }"
    )
    items = [
        {"externalId": "J-1", "title": "one", "content": "c1"},
        {"externalId": "J-2", "title": "two"},
    ]
    first = await gql(mutation, {"i": {"source": "jira", "items": items}})
    assert first["data"]["upsertExternalNotes"]["created"] == 2
    replay = await gql(mutation, {"i": {"source": "jira", "items": items}})
    payload = replay["data"]["upsertExternalNotes"]
    assert [r["outcome"] for r in payload["results"]] == ["UNCHANGED", "UNCHANGED"]
    changed = [{"externalId": "J-1", "title": "one!", "content": "c1"}]
    conflict = await gql(
        mutation, {"i": {"source": "jira", "items": changed, "onChange": "CONFLICT"}}
    )
    assert conflict["data"]["upsertExternalNotes"]["results"][0]["outcome"] == "CONFLICT"
    versioned = await gql(
        mutation, {"i": {"source": "jira", "items": changed, "onChange": "VERSION"}}
    )
    result = versioned["data"]["upsertExternalNotes"]["results"][0]
    assert result["outcome"] == "UPDATED"
    assert result["note"] == {"title": "one!", "version": 2}
