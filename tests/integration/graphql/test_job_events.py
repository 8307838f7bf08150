"""jobEvents over graphql-transport-ws: one job or a memory's jobs, only for its readers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, open_memory
from tests.support.subscriptions import collect, ws_transport

pytestmark = pytest.mark.live

FEED = """subscription($job: ID, $types: [String!]) {
  jobEvents(jobId: $job, types: $types) { id type memory entityType entityId correlationId payload }
}"""


async def _purge_job(gql_call: GraphQLCall, memory: str | None = None) -> str:
    """A pending PurgeNote job (no worker runs in these tests, so it stays pending)."""
    kwargs: dict[str, Any] = {} if memory is None else {"memory": memory}
    created = await gql_call('mutation { createNote(input: {title: "doomed"}) { id } }', **kwargs)
    note_id = created["data"]["createNote"]["id"]
    await gql_call("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": note_id}, **kwargs)
    body = await gql_call(
        "mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }", {"ids": [note_id]}, **kwargs
    )
    assert "errors" not in body, body
    job_id: str = body["data"]["purgeNotes"]["id"]
    return job_id


async def test_a_jobs_subscribers_see_its_cancellation_and_retry_with_the_actor(
    gql: GraphQLCall, live_server: str, user_token: str, memory: str
) -> None:
    job_id = await _purge_job(gql)
    other_job = await _purge_job(gql)
    cancelled = False

    async def provoke() -> None:
        # Cancel and retry in turn: each change is an event for this job's subscribers.
        nonlocal cancelled
        verb = "retryJob" if cancelled else "cancelJob"
        body = await gql(f"mutation($id: ID!) {{ {verb}(id: $id) {{ status }} }}", {"id": job_id})
        assert "errors" not in body, body
        await gql("mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": other_job})
        cancelled = not cancelled

    try:
        events = await collect(
            ws_transport(live_server, user_token, memory),
            FEED,
            {"job": job_id},
            provoke,
            lambda got: {"job.cancelled", "job.retrying"} <= {e["type"] for e in got},
        )
    finally:
        await gql("mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": job_id})
    # Only this job's events, never the other job's.
    assert {e["entityId"] for e in events} == {job_id}
    assert all(e["entityType"] == "job" and e["memory"] == memory for e in events)
    cancellation = next(e for e in events if e["type"] == "job.cancelled")
    assert cancellation["payload"]["status"] == "cancelled"
    assert cancellation["payload"]["jobType"] == "PurgeNote"
    assert cancellation["correlationId"] == job_id


@pytest.fixture
async def other_memory(runtime: Runtime) -> AsyncIterator[str]:
    name = await open_memory(runtime)
    yield name
    await runtime.memories.delete(name, confirm=name)


async def test_memory_wide_job_events_keep_to_the_memory_and_the_types_asked_for(
    gql: GraphQLCall, live_server: str, user_token: str, memory: str, other_memory: str
) -> None:
    elsewhere: list[str] = []

    async def provoke() -> None:
        # A job elsewhere first, then one here: only the latter may arrive.
        elsewhere.append(await _purge_job(gql, other_memory))
        job_id = await _purge_job(gql)
        await gql("mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": job_id})

    try:
        events = await collect(
            ws_transport(live_server, user_token, memory),
            FEED,
            {"types": ["job.cancelled"]},
            provoke,
            lambda got: len(got) >= 1,
        )
    finally:
        for job_id in elsewhere:
            await gql(
                "mutation($id: ID!) { cancelJob(id: $id) { status } }",
                {"id": job_id},
                memory=other_memory,
            )
    assert {e["type"] for e in events} == {"job.cancelled"}
    assert {e["memory"] for e in events} == {memory}
    assert not {e["entityId"] for e in events} & set(elsewhere)


async def _subscribe_error(
    live_server: str, token: str, memory: str, variables: dict[str, Any]
) -> dict[str, Any]:
    async with Client(transport=ws_transport(live_server, token, memory)) as session:
        feed = gql(FEED)
        feed.variable_values = variables
        with pytest.raises(TransportQueryError) as raised:
            async for _ in session.subscribe(feed):
                pass
    assert raised.value.errors is not None
    error: dict[str, Any] = raised.value.errors[0]
    return error


async def test_a_job_you_cannot_read_is_not_found_and_unknown_types_are_refused(
    gql: GraphQLCall, live_server: str, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    job_id = await _purge_job(gql)
    try:
        outsider = issuer.mint("otto-outsider", groups=["data-team"])
        hidden = await _subscribe_error(live_server, outsider, memory, {"job": job_id})
        assert hidden["extensions"]["code"] == "NOT_FOUND"
        unknown = await _subscribe_error(
            live_server, user_token, memory, {"job": job_id, "types": ["job.exploded"]}
        )
        assert unknown["extensions"]["code"] == "BAD_USER_INPUT"
        assert "job.exploded" in unknown["message"]
    finally:
        await gql("mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": job_id})
