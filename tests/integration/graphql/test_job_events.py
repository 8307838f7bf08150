"""jobEvents over graphql-transport-ws: one job or a memory's jobs, only for its readers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.websockets import WebsocketsTransport

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, open_memory

pytestmark = pytest.mark.live

FEED = """subscription($job: ID, $types: [String!]) {
  jobEvents(jobId: $job, types: $types) { id type memory entityType entityId correlationId payload }
}"""


def _transport(live_server: str, token: str, memory: str) -> WebsocketsTransport:
    return WebsocketsTransport(
        url=f"ws://{live_server}/graphql",
        init_payload={"authorization": f"Bearer {token}", "x-fortemi-memory": memory},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
    )


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


async def _collect(
    live_server: str,
    token: str,
    memory: str,
    variables: dict[str, Any],
    provoke: Callable[[], Awaitable[None]],
    enough: Callable[[list[dict[str, Any]]], bool],
) -> list[dict[str, Any]]:
    """Events of one subscription, provoking until ``enough(events)`` (bounded)."""
    received: list[dict[str, Any]] = []
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    async with Client(transport=_transport(live_server, token, memory)) as session:
        feed = gql(FEED)
        feed.variable_values = variables

        async def consume() -> None:
            async for event in session.subscribe(feed):
                await queue.put(event["jobEvents"])

        consumer = asyncio.create_task(consume())
        try:
            for _ in range(20):
                await provoke()
                try:
                    while True:
                        received.append(await asyncio.wait_for(queue.get(), timeout=1))
                        if enough(received):
                            return received
                except TimeoutError:
                    if consumer.done():
                        consumer.result()
        finally:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
    raise AssertionError(f"not enough events arrived: {received}")


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
        events = await _collect(
            live_server,
            user_token,
            memory,
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
        events = await _collect(
            live_server,
            user_token,
            memory,
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
    async with Client(transport=_transport(live_server, token, memory)) as session:
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
