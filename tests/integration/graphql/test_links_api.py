"""Links through GraphQL: explicit links, wiki links, noteLinks and Note.backlinks, each
read through the caller's read scope and each change authorized and audited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes, open_memory

CREATE = "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }"
LINK = """mutation($from: ID!, $to: ID!, $score: Float! = 1.0) {
  createNoteLink(from: $from, to: $to, score: $score) {
    source { id } target { id } score created createdBy createdAt } }"""
UNLINK = "mutation($from: ID!, $to: ID!) { deleteNoteLink(from: $from, to: $to) }"
LINKS = """query($id: ID!) { noteLinks(id: $id) {
  outgoing { note { id title } kind score rank pruned }
  incoming { note { id title } kind score }
  dangling { target heading label embed } } }"""
BACKLINKS = "query($id: ID!) { note(id: $id) { backlinks { note { title } kind score } } }"


@pytest.fixture(scope="module")
def people(issuer: LocalIssuer) -> dict[str, str]:
    return {
        "alice": issuer.mint("alice", groups=["data-team"], roles=["editor"]),
        "charlie": issuer.mint("charlie", groups=["platform-team"], roles=["viewer"]),
        "dana": issuer.mint("dana", groups=["platform-team"], roles=["editor"]),
        "auditor": issuer.mint("ivy", roles=["auditor"]),
    }


async def _note(
    gql: GraphQLCall, token: str | None = None, memory: str | None = None, **note: Any
) -> str:
    call: dict[str, Any] = {"token": token} if token is not None else {}
    if memory is not None:
        call["memory"] = memory
    body = await gql(CREATE, {"i": note}, **call)
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


async def _links(gql: GraphQLCall, note_id: str, token: str | None = None) -> dict[str, Any]:
    body = await (
        gql(LINKS, {"id": note_id}) if token is None else gql(LINKS, {"id": note_id}, token=token)
    )
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]["noteLinks"]
    return found


async def test_an_explicit_link_is_listed_both_ways_and_repeats_are_harmless(
    gql: GraphQLCall,
) -> None:
    a, b = await _note(gql, title="A"), await _note(gql, title="B")
    made = await gql(LINK, {"from": a, "to": b, "score": 0.25})
    assert made["data"]["createNoteLink"]["created"] is True
    assert made["data"]["createNoteLink"]["createdBy"] == "alice"
    assert made["data"]["createNoteLink"]["score"] == 0.25
    repeat = await gql(LINK, {"from": a, "to": b, "score": 0.25})
    assert repeat["data"]["createNoteLink"]["created"] is False
    assert (
        repeat["data"]["createNoteLink"]["createdAt"] == made["data"]["createNoteLink"]["createdAt"]
    )
    rescored = await gql(LINK, {"from": a, "to": b, "score": 0.75})
    assert error_codes(rescored) == ["CONFLICT"]
    assert rescored["errors"][0]["extensions"]["existing_score"] == 0.25
    assert "0.25" in rescored["errors"][0]["message"]

    outgoing = (await _links(gql, a))["outgoing"]
    assert outgoing == [
        {"note": {"id": b, "title": "B"}, "kind": "EXPLICIT", "score": 0.25, "rank": None,
         "pruned": False}
    ]  # fmt: skip
    assert (await _links(gql, b))["incoming"] == [
        {"note": {"id": a, "title": "A"}, "kind": "EXPLICIT", "score": 0.25}
    ]
    backlinks = await gql(BACKLINKS, {"id": b})
    assert backlinks["data"]["note"]["backlinks"] == [
        {"note": {"title": "A"}, "kind": "EXPLICIT", "score": 0.25}
    ]

    assert (await gql(UNLINK, {"from": a, "to": b}))["data"]["deleteNoteLink"] is True
    assert (await gql(UNLINK, {"from": a, "to": b}))["data"]["deleteNoteLink"] is False
    assert (await _links(gql, a))["outgoing"] == []


@pytest.mark.parametrize(
    ("score", "code"),
    [(1.5, "BAD_USER_INPUT"), (-0.1, "BAD_USER_INPUT"), ("high", "BAD_USER_INPUT")],
)
async def test_a_score_outside_zero_to_one_or_not_a_number_is_bad_input(
    gql: GraphQLCall, score: object, code: str
) -> None:
    a, b = await _note(gql, title="A"), await _note(gql, title="B")
    assert error_codes(await gql(LINK, {"from": a, "to": b, "score": score})) == [code]


async def test_a_note_cannot_link_to_itself_nor_to_a_missing_note(gql: GraphQLCall) -> None:
    a = await _note(gql, title="A")
    assert error_codes(await gql(LINK, {"from": a, "to": a})) == ["BAD_USER_INPUT"]
    missing = "00000000-0000-0000-0000-000000000001"
    assert error_codes(await gql(LINK, {"from": a, "to": missing})) == ["NOT_FOUND"]
    assert error_codes(await gql(LINKS, {"id": missing})) == ["NOT_FOUND"]


async def test_wiki_links_in_content_are_listed_with_the_dangling_ones(gql: GraphQLCall) -> None:
    target = await _note(gql, title="Target Note")
    source = await _note(
        gql,
        title="Source",
        content="[[target note#Usage|how]] and ![[Missing#Part|shown]]\n\n```\n[[Code]]\n```",
    )
    found = await _links(gql, source)
    assert [(x["note"]["id"], x["kind"], x["score"]) for x in found["outgoing"]] == [
        (target, "WIKI", 1.0)
    ]
    assert found["dangling"] == [
        {"target": "Missing", "heading": "Part", "label": "shown", "embed": True}
    ]
    # Creating the missing note resolves the reference at once.
    missing = await _note(gql, title="missing")
    assert {x["note"]["id"] for x in (await _links(gql, source))["outgoing"]} == {target, missing}
    assert (await _links(gql, source))["dangling"] == []


async def test_an_unreadable_target_is_not_found_and_a_read_only_source_is_forbidden(
    gql: GraphQLCall, people: dict[str, str], memory: str
) -> None:
    mine = await _note(gql, people["alice"], title="alice's")
    hidden = await _note(gql, people["dana"], title="platform runbook", project="poimen")
    # alice may not read poimen: whichever end it is, it does not exist for her.
    assert error_codes(await gql(LINK, {"from": mine, "to": hidden}, token=people["alice"])) == [
        "NOT_FOUND"
    ]
    assert error_codes(await gql(LINK, {"from": hidden, "to": mine}, token=people["alice"])) == [
        "NOT_FOUND"
    ]
    assert error_codes(await gql(LINKS, {"id": hidden}, token=people["alice"])) == ["NOT_FOUND"]
    # charlie reads both but writes neither (a viewer): FORBIDDEN, with the reason.
    refused = await gql(LINK, {"from": hidden, "to": mine}, token=people["charlie"])
    assert error_codes(refused) == ["FORBIDDEN"]
    assert refused["errors"][0]["extensions"]["reason"] == "role_requirement_failed"
    recorded = await gql(
        """query($m: String!) {
             auditLog(filter: {userId: "charlie", decision: "deny", memory: $m}, first: 1)
             { edges { node { action resourceName reason } } } }""",
        {"m": memory},
        token=people["auditor"],
    )
    assert recorded["data"]["auditLog"]["edges"][0]["node"] == {
        "action": "write",
        "resourceName": "poimen",
        "reason": "role_requirement_failed",
    }
    # dana may write the poimen note and read alice's: allowed.
    made = await gql(LINK, {"from": hidden, "to": mine}, token=people["dana"])
    assert made["data"]["createNoteLink"]["created"] is True


async def test_links_to_notes_the_caller_may_not_read_are_left_out(
    gql: GraphQLCall, people: dict[str, str]
) -> None:
    shared = await _note(gql, people["dana"], title="Shared page")
    secret = await _note(
        gql, people["dana"], title="Platform secret", project="poimen", content="[[Shared page]]"
    )
    await gql(LINK, {"from": shared, "to": secret}, token=people["dana"])
    opened = await _note(gql, people["dana"], title="Open", content="[[Shared page]]")

    as_dana = await _links(gql, shared, people["dana"])
    assert {x["note"]["id"] for x in as_dana["incoming"]} == {secret, opened}
    assert [x["note"]["id"] for x in as_dana["outgoing"]] == [secret]

    as_alice = await _links(gql, shared, people["alice"])
    assert [x["note"]["id"] for x in as_alice["incoming"]] == [opened]
    assert as_alice["outgoing"] == []
    backlinks = await gql(BACKLINKS, {"id": shared}, token=people["alice"])
    assert backlinks["data"]["note"]["backlinks"] == [
        {"note": {"title": "Open"}, "kind": "WIKI", "score": 1.0}
    ]


async def test_deleted_notes_are_left_out_of_links(gql: GraphQLCall) -> None:
    target = await _note(gql, title="Soon gone")
    source = await _note(gql, title="S", content="[[Soon gone]]")
    await gql("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": target})
    assert (await _links(gql, source))["outgoing"] == []
    await gql("mutation($id: ID!) { restoreNote(id: $id) { id } }", {"id": target})
    assert [x["note"]["id"] for x in (await _links(gql, source))["outgoing"]] == [target]


@pytest.fixture
async def second_memory(runtime: Runtime) -> AsyncIterator[str]:
    name = await open_memory(runtime)
    yield name
    await runtime.memories.delete(name, confirm=name)


async def test_backlinks_of_a_note_found_in_another_memory_are_read_there(
    gql: GraphQLCall, memory: str, second_memory: str
) -> None:
    await _note(gql, title="Glacier", content="glacier melt here")
    await _note(gql, title="Glacier", content="glacier melt there", memory=second_memory)
    await _note(gql, title="Field log", content="see [[Glacier]]", memory=second_memory)
    body = await gql(
        """query($m: [String!]) { search(query: "melt", mode: LEXICAL, memories: $m) {
             hits { memory note { title backlinks { note { title } } } } } }""",
        {"m": [memory, second_memory]},
    )
    assert "errors" not in body, body
    backlinks = {
        hit["memory"]: [b["note"]["title"] for b in hit["note"]["backlinks"]]
        for hit in body["data"]["search"]["hits"]
    }
    assert backlinks == {memory: [], second_memory: ["Field log"]}
