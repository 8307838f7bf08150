"""Entering a memory: one rule on every path that works in one.

A memory that does not exist and one the caller may not read answer the same NOT_FOUND,
so names cannot be probed, and both refusals are audit rows with decision ``deny``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gql import Client
from gql import gql as gql_document
from gql.transport.exceptions import TransportQueryError

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes
from tests.support.subscriptions import Events, collect, ws_transport

# (name, operation, whether the memory goes in the header; else the operation names it
# as $m, and the header names the test's open memory)
PATHS = [
    ("notes", "{ notes { totalCount } }", True),
    ("search", '{ search(query: "x") { hits { memory } } }', True),
    (
        "search across memories",
        'query($m: String!) { search(query: "x", memories: [$m]) { hits { memory } } }',
        False,
    ),
    ("searchIndexStatus", "{ searchIndexStatus { notes } }", True),
    ("jobs", "{ jobs { edges { node { id } } } }", True),
    (
        "jobs of a named memory",
        "query($m: String!) { jobs(filter: {memory: $m}) { edges { node { id } } } }",
        False,
    ),
    ("webhooks", "{ webhooks { id } }", True),
    ("createNote", 'mutation { createNote(input: {title: "x"}) { id } }', True),
    (
        "upsertExternalNotes",
        'mutation { upsertExternalNotes(input: {source: "s", items: [{externalId: "1", '
        'title: "t"}]}) { created } }',
        True,
    ),
    ("pauseJobs", "mutation($m: String!) { pauseJobs(memory: $m) }", False),
]


@pytest.fixture
async def closed_memory(runtime: Runtime) -> AsyncIterator[str]:
    """A memory with no policy of its own: default deny, so nobody may enter it."""
    name = f"shut_{uuid.uuid4().hex[:12]}"
    await runtime.memories.create(name, created_by="test")
    yield name
    await runtime.memories.delete(name, confirm=name)


def _prober(issuer: LocalIssuer) -> tuple[str, str]:
    user = f"prober-{uuid.uuid4().hex[:8]}"
    return user, issuer.mint(user, groups=["platform-team"], roles=["editor"])


async def _audit_rows(runtime: Runtime, user: str) -> list[dict[str, Any]]:
    async with runtime.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT resource_type, memory, action, decision, reason FROM public.rbac_audit_log "
            "WHERE user_id = $1 ORDER BY segment, seq",
            user,
        )
    return [dict(row) for row in rows]


async def _ask(
    gql: GraphQLCall, operation: str, in_header: bool, token: str, memory: str, target: str
) -> dict[str, Any]:
    if in_header:
        return await gql(operation, token=token, memory=target)
    return await gql(operation, {"m": target}, token=token, memory=memory)


@pytest.mark.parametrize(
    ("operation", "in_header"), [(op, header) for _, op, header in PATHS], ids=[p[0] for p in PATHS]
)
async def test_a_closed_memory_answers_like_a_missing_one_and_both_are_audited_denies(
    gql: GraphQLCall,
    issuer: LocalIssuer,
    runtime: Runtime,
    memory: str,
    closed_memory: str,
    operation: str,
    in_header: bool,
) -> None:
    user, token = _prober(issuer)
    missing = f"gone_{uuid.uuid4().hex[:12]}"
    closed = await _ask(gql, operation, in_header, token, memory, closed_memory)
    absent = await _ask(gql, operation, in_header, token, memory, missing)
    assert error_codes(closed) == error_codes(absent) == ["NOT_FOUND"], (closed, absent)
    # Word for word the same answer, but for the name the caller sent.
    (closed_error,) = closed["errors"]
    (absent_error,) = absent["errors"]
    assert closed_error["message"].replace(closed_memory, "?") == absent_error["message"].replace(
        missing, "?"
    )
    assert closed_error["extensions"] == {"code": "NOT_FOUND", "memory": closed_memory}
    assert absent_error["extensions"] == {"code": "NOT_FOUND", "memory": missing}
    rows = await _audit_rows(runtime, user)
    entries = [
        (r["memory"], r["decision"], r["reason"])
        for r in rows
        if r["resource_type"] == "memory" and r["action"] == "read"
    ]
    assert (closed_memory, "deny", "no_policy_default_deny") in entries
    assert (missing, "deny", "not_found") in entries
    # Nothing about either memory is recorded as allowed.
    assert not [
        r for r in rows if r["memory"] in (closed_memory, missing) and r["decision"] == "allow"
    ]


async def test_listing_notes_in_a_memory_you_may_not_read_is_not_found_not_an_empty_list(
    gql: GraphQLCall, issuer: LocalIssuer, runtime: Runtime, closed_memory: str
) -> None:
    user, token = _prober(issuer)
    body = await gql(
        "{ notes { totalCount edges { node { id } } } }", token=token, memory=closed_memory
    )
    assert error_codes(body) == ["NOT_FOUND"]
    assert body["data"] is None
    rows = await _audit_rows(runtime, user)
    assert [(r["decision"], r["reason"]) for r in rows] == [("deny", "no_policy_default_deny")]


async def test_a_note_by_id_in_a_memory_you_may_not_read_is_null_and_audited(
    gql: GraphQLCall, issuer: LocalIssuer, runtime: Runtime, closed_memory: str
) -> None:
    user, token = _prober(issuer)
    body = await gql(
        "query($id: ID!) { note(id: $id) { id } }",
        {"id": str(uuid.uuid4())},
        token=token,
        memory=closed_memory,
    )
    assert body["data"] == {"note": None}
    rows = await _audit_rows(runtime, user)
    assert [(r["memory"], r["decision"]) for r in rows] == [(closed_memory, "deny")]


async def test_memory_by_name_is_null_for_a_missing_or_closed_memory_and_both_are_audited(
    gql: GraphQLCall, issuer: LocalIssuer, runtime: Runtime, memory: str, closed_memory: str
) -> None:
    user, token = _prober(issuer)
    missing = f"gone_{uuid.uuid4().hex[:12]}"
    query = "query($n: String!) { memory(name: $n) { name noteCount } }"
    for name in (closed_memory, missing):
        body = await gql(query, {"n": name}, token=token)
        assert body == {"data": {"memory": None}}
    readable = await gql(query, {"n": memory}, token=token)
    assert readable["data"] == {"memory": {"name": memory, "noteCount": 0}}
    rows = await _audit_rows(runtime, user)
    assert [(r["memory"], r["decision"], r["reason"]) for r in rows[:2]] == [
        (closed_memory, "deny", "no_policy_default_deny"),
        (missing, "deny", "not_found"),
    ]


UPSERT = """mutation($i: UpsertExternalNotesInput!) {
  upsertExternalNotes(input: $i) { created updated results { note { title project } } } }"""


async def test_upserting_the_external_id_of_a_note_you_cannot_read_names_nothing_of_it(
    gql: GraphQLCall, issuer: LocalIssuer, runtime: Runtime, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    item = {"externalId": "acct-7", "title": "rotation keys", "project": "poimen"}
    made = await gql(UPSERT, {"i": {"source": "crm", "items": [item]}}, token=dana)
    assert made["data"]["upsertExternalNotes"]["created"] == 1, made
    user = f"eve-{uuid.uuid4().hex[:8]}"
    eve = issuer.mint(user, groups=["data-team"], roles=["editor"])
    mine = {"externalId": "acct-7", "title": "mine"}
    body = await gql(UPSERT, {"i": {"source": "crm", "items": [mine]}}, token=eve)
    assert error_codes(body) == ["CONFLICT"], body
    (error,) = body["errors"]
    assert "poimen" not in str(error)
    assert "acct-7" in error["message"]
    assert error["extensions"]["reason"] == "external_id_taken"
    # The hidden note is untouched, and the refusal is a recorded read deny.
    still = await gql(
        '{ notes(filter: {project: "poimen"}) { edges { node { title } } } }', token=dana
    )
    assert [e["node"]["title"] for e in still["data"]["notes"]["edges"]] == ["rotation keys"]
    rows = await _audit_rows(runtime, user)
    refusal = {
        "resource_type": "project",
        "memory": memory,
        "action": "read",
        "decision": "deny",
        "reason": "not_in_allowed_groups",
    }
    assert refusal in rows
    # An id nobody holds is still created.
    fresh = await gql(
        UPSERT,
        {"i": {"source": "crm", "items": [{"externalId": "acct-8", "title": "t"}]}},
        token=eve,
    )
    assert fresh["data"]["upsertExternalNotes"]["created"] == 1, fresh


JOBS = '{ jobs(filter: {type: "Embedding"}) { edges { node { type dedupeKey } } } }'


async def test_dedupe_keys_naming_notes_are_shown_to_memory_admins_only(
    gql: GraphQLCall, issuer: LocalIssuer, runtime: Runtime, admin_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    made = await gql(
        'mutation { createNote(input: {title: "hidden", project: "poimen"}) { id } }', token=dana
    )
    assert "errors" not in made, made
    user = f"viewer-{uuid.uuid4().hex[:8]}"
    viewer = issuer.mint(user, groups=["data-team"], roles=["viewer"])
    seen = await gql(JOBS, token=viewer)
    nodes = [e["node"] for e in seen["data"]["jobs"]["edges"]]
    assert nodes, seen
    assert {n["dedupeKey"] for n in nodes} == {None}
    as_admin = await gql(JOBS, token=admin_token)
    keys = [e["node"]["dedupeKey"] for e in as_admin["data"]["jobs"]["edges"]]
    assert keys
    assert all(key.startswith(f"Embedding:{memory}:") for key in keys)
    rows = await _audit_rows(runtime, user)
    assert ("memory", "admin", "deny") in {
        (r["resource_type"], r["action"], r["decision"]) for r in rows
    }


JOB_FEED = """subscription { jobEvents(types: ["job.created"]) { payload } }"""


@pytest.mark.live
async def test_job_events_carry_dedupe_keys_to_memory_admins_only(
    gql: GraphQLCall, live_server: str, user_token: str, admin_token: str, memory: str
) -> None:
    async def provoke() -> None:
        made = await gql('mutation { createNote(input: {title: "indexed"}) { id } }')
        assert "errors" not in made, made

    def embedding(got: Events) -> bool:
        return any(e["payload"]["jobType"] == "Embedding" for e in got)

    for token, shown in ((user_token, False), (admin_token, True)):
        events = await collect(
            ws_transport(live_server, token, memory), JOB_FEED, {}, provoke, embedding
        )
        keys = [e["payload"]["dedupeKey"] for e in events if e["payload"]["jobType"] == "Embedding"]
        assert keys
        if shown:
            assert all(key.startswith(f"Embedding:{memory}:") for key in keys), keys
        else:
            assert set(keys) == {None}, keys


@pytest.mark.live
async def test_a_websocket_connection_enters_its_memory_anew_for_each_operation(
    live_server: str, user_token: str, runtime: Runtime, memory: str
) -> None:
    count = gql_document("{ notes { totalCount } }")
    async with Client(transport=ws_transport(live_server, user_token, memory)) as session:
        assert await session.execute(count) == {"notes": {"totalCount": 0}}
        # The memory closes to everyone but its creator while the connection stays open.
        closed = {
            "version": 1,
            "memory": memory,
            "access_level": "private",
            "grant": {"subjects": ["test"]},
        }
        await runtime.policies.put("memory", memory, memory, closed, actor="test")
        with pytest.raises(TransportQueryError) as refused:
            await session.execute(count)
    assert refused.value.errors is not None
    assert [e["extensions"]["code"] for e in refused.value.errors] == ["NOT_FOUND"]
