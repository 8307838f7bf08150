"""The seed's access scenarios, through the API, with the shipped policies.

poimen: owner platform-team, group access for platform-team and devops-team, viewers read,
editors write. SKILL-private-debug: private to ml-team, editors write.
"""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.errors import Unavailable
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

CREATE = "mutation($i: CreateNoteInput!) { createNote(input: $i) { id title } }"
TITLES = "query($f: NoteFilter) { notes(first: 50, filter: $f) { edges { node { title } } } }"


@pytest.fixture(scope="module")
def people(issuer: LocalIssuer) -> dict[str, str]:
    return {
        "charlie": issuer.mint(
            "charlie", groups=["platform-team", "devops-team"], roles=["viewer"]
        ),
        "alice": issuer.mint("alice", groups=["data-team"], roles=["viewer"]),
        "bob": issuer.mint("bob", groups=["ml-team"], roles=["editor"]),
        "dana": issuer.mint("dana", groups=["platform-team"], roles=["editor"]),
        "root": issuer.mint("root", roles=["admin"]),
        "auditor": issuer.mint("ivy", roles=["auditor"]),
        "reader": issuer.mint("ron", permissions=["audit:read"]),
    }


async def _create(gql: GraphQLCall, token: str, **note: Any) -> str:
    body = await gql(CREATE, {"i": note}, token=token)
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


def _reason(body: dict[str, Any]) -> str | None:
    reason: str | None = (body.get("errors") or [{}])[0].get("extensions", {}).get("reason")
    return reason


async def _titles(gql: GraphQLCall, token: str, filter_: dict[str, Any] | None = None) -> list[str]:
    body = await gql(TITLES, {"f": filter_}, token=token)
    assert "errors" not in body, body
    return sorted(edge["node"]["title"] for edge in body["data"]["notes"]["edges"])


async def test_charlie_reads_poimen_because_he_is_in_an_allowed_group(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    await _create(gql, people["dana"], title="runbook", project="poimen")
    assert await _titles(gql, people["charlie"], {"project": "poimen"}) == ["runbook"]
    recorded = await gql(
        """{ auditLog(filter: {userId: "charlie", resourceName: "poimen"}, first: 1)
             { edges { node { decision reason } } } }""",
        token=people["auditor"],
    )
    assert recorded["data"]["auditLog"]["edges"][0]["node"] == {
        "decision": "allow",
        "reason": "in_allowed_group",
    }


async def test_alice_asking_for_poimen_is_forbidden_with_the_reason(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    note_id = await _create(gql, people["dana"], title="runbook", project="poimen")
    body = await gql(TITLES, {"f": {"project": "poimen"}}, token=people["alice"])
    assert error_codes(body) == ["FORBIDDEN"]
    assert _reason(body) == "not_in_allowed_groups"
    # By id she learns nothing, not even that it exists: not-found before forbidden.
    by_id = await gql(
        "query($id: ID!) { note(id: $id) { id } }", {"id": note_id}, token=people["alice"]
    )
    assert by_id["data"] == {"note": None}
    update = await gql(
        'mutation($id: ID!) { updateNote(id: $id, input: {title: "x"}) { id } }',
        {"id": note_id},
        token=people["alice"],
    )
    assert error_codes(update) == ["NOT_FOUND"]
    # And an unfiltered list simply leaves poimen out.
    assert "runbook" not in await _titles(gql, people["alice"])


async def test_private_skill_is_visible_to_its_owner_group_only(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    await _create(gql, people["bob"], title="debug secrets", skill="SKILL-private-debug")
    await _create(gql, people["dana"], title="shared note")
    assert await _titles(gql, people["charlie"]) == ["shared note"]
    assert await _titles(gql, people["bob"]) == ["debug secrets", "shared note"]
    asked = await gql(TITLES, {"f": {"skill": "SKILL-private-debug"}}, token=people["charlie"])
    assert error_codes(asked) == ["FORBIDDEN"]
    assert _reason(asked) == "not_in_owner_group"


async def test_writing_to_poimen_needs_the_editor_role(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    body = await gql(CREATE, {"i": {"title": "t", "project": "poimen"}}, token=people["charlie"])
    assert error_codes(body) == ["FORBIDDEN"]
    assert _reason(body) == "role_requirement_failed"
    await _create(gql, people["dana"], title="t", project="poimen")


async def test_moving_a_note_needs_write_where_it_lands(
    gql: GraphQLCall, people: dict[str, str], user_token: str
) -> None:
    note_id = await _create(gql, user_token, title="movable", project="p1")
    body = await gql(
        'mutation($id: ID!) { updateNote(id: $id, input: {project: "poimen"}) { id } }',
        {"id": note_id},
        token=user_token,  # alice the editor (data-team): may write p1, not poimen
    )
    assert error_codes(body) == ["FORBIDDEN"]
    still = await gql("query($id: ID!) { note(id: $id) { project } }", {"id": note_id})
    assert still["data"]["note"] == {"project": "p1"}


async def test_a_thousand_unreadable_notes_ranking_first_leave_a_full_first_page(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    for i in range(25):
        await _create(gql, people["dana"], title=f"readable {i:02d}")
    upsert = (
        "mutation($i: UpsertExternalNotesInput!) { upsertExternalNotes(input: $i) { created } }"
    )
    for batch in range(2):  # 1,000 newer notes charlie may not read
        items = [
            {"externalId": f"{batch}-{i}", "title": "hidden", "skill": "SKILL-private-debug"}
            for i in range(500)
        ]
        body = await gql(upsert, {"i": {"source": "bulk", "items": items}}, token=people["bob"])
        assert body["data"]["upsertExternalNotes"]["created"] == 500, body
    page = await gql(
        "{ notes(first: 20) { totalCount edges { node { title } } pageInfo { hasNextPage } } }",
        token=people["charlie"],
    )
    notes = page["data"]["notes"]
    assert [e["node"]["title"] for e in notes["edges"]] == [
        f"readable {i:02d}" for i in range(24, 4, -1)
    ]
    assert notes["pageInfo"]["hasNextPage"] is True
    assert notes["totalCount"] == 25


async def test_memory_lifecycle_needs_the_admin_role_and_lists_only_readable_memories(
    gql: GraphQLCall, people: dict[str, str], memory: str
) -> None:
    refused = await gql('mutation { createMemory(name: "nope") { name } }', token=people["dana"])
    assert error_codes(refused) == ["FORBIDDEN"]
    assert _reason(refused) == "role_requirement_failed"
    listed = await gql("{ memories { name } }", token=people["charlie"])
    assert memory in [m["name"] for m in listed["data"]["memories"]]


async def test_a_new_memory_without_a_policy_is_its_creators_alone(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    name = "created_by_root"
    made = await gql(
        "mutation($n: String!) { createMemory(name: $n) { name } }",
        {"n": name},
        token=people["root"],
    )
    assert made["data"] == {"createMemory": {"name": name}}
    try:
        mine = await gql(CREATE, {"i": {"title": "mine"}}, token=people["root"], memory=name)
        assert "errors" not in mine, mine
        # To everyone else it does not exist.
        theirs = await gql("{ notes { totalCount } }", token=people["dana"], memory=name)
        assert error_codes(theirs) == ["NOT_FOUND"]
        denied = await gql(CREATE, {"i": {"title": "x"}}, token=people["dana"], memory=name)
        assert error_codes(denied) == ["NOT_FOUND"]
    finally:
        await gql(
            "mutation($n: String!) { deleteMemory(name: $n, confirm: $n) }",
            {"n": name},
            token=people["root"],
        )


async def test_a_request_whose_decision_cannot_be_audited_is_refused(
    gql: GraphQLCall, people: dict[str, str], runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def audit_down(records: object) -> None:
        raise Unavailable("The audit log is unavailable; the request was refused")

    with monkeypatch.context() as patched:
        patched.setattr(runtime.audit, "record", audit_down)
        body = await gql(CREATE, {"i": {"title": "unaudited"}}, token=people["dana"])
    assert error_codes(body) == ["SERVICE_UNAVAILABLE"]
    assert "unaudited" not in await _titles(gql, people["dana"])


async def test_a_memory_recreated_under_an_old_name_does_not_inherit_its_grants(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    name = "recycled_name"
    # Anyone may enter it, so what is asked about is the project's stored grant alone.
    create = """mutation($n: String!) { createMemory(name: $n, policy: {version: 1,
        memory: "recycled_name", access_level: "public", required_role: "viewer"}) { name } }"""
    delete = "mutation($n: String!) { deleteMemory(name: $n, confirm: $n) }"
    share = """mutation($m: String!) { setPolicy(input: {resourceType: PROJECT, name: "shared",
        memory: $m, document: {version: 1, project: "shared", access_level: "public",
        required_role: "viewer"}}) { version } }"""
    asks_shared = 'query { notes(filter: {project: "shared"}) { totalCount } }'
    # The memory lets viewers in, so the project's own policy decides inside it.
    viewers = """mutation($m: String!) { setPolicy(input: {resourceType: MEMORY, name: $m,
        memory: $m, document: {version: 1, memory: "recycled_name", access_level: "public",
        required_role: "viewer"}}) { version } }"""
    await gql(create, {"n": name}, token=people["root"])
    opened = await gql(viewers, {"m": name}, token=people["root"])
    assert "errors" not in opened, opened
    shared = await gql(share, {"m": name}, token=people["root"])
    assert "errors" not in shared, shared
    before = await gql(asks_shared, token=people["charlie"], memory=name)
    assert before["data"] == {"notes": {"totalCount": 0}}
    await gql(delete, {"n": name}, token=people["root"])
    await gql(create, {"n": name}, token=people["root"])
    try:
        reopened = await gql(viewers, {"m": name}, token=people["root"])
        assert "errors" not in reopened, reopened
        after = await gql(asks_shared, token=people["charlie"], memory=name)
        assert error_codes(after) == ["FORBIDDEN"]
        assert _reason(after) == "no_policy_default_deny"
    finally:
        await gql(delete, {"n": name}, token=people["root"])
