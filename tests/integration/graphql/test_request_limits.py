"""Requests that ask for too much are refused before they cost the server what they ask."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from fortemi.app import create_app
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes
from tests.support.live import serve


def _app(runtime: Runtime, **limits: Any) -> Starlette:
    settings = runtime.settings.model_copy(update=limits)
    return create_app(dataclasses.replace(runtime, settings=settings))


async def test_thirty_aliased_pages_of_content_are_refused_before_execution(
    gql: GraphQLCall, settings: Settings
) -> None:
    pages = " ".join(
        f"a{i}: notes(first: 100) {{ edges {{ node {{ content }} }} }}" for i in range(30)
    )
    body = await gql("{ " + pages + " }")
    assert body["data"] is None
    assert error_codes(body) == ["QUERY_TOO_COMPLEX"]
    assert body["errors"][0]["extensions"]["limit"] == settings.max_query_cost


async def test_a_response_over_the_cap_is_replaced_by_an_error(
    gql: GraphQLCall, runtime: Runtime, user_token: str, memory: str
) -> None:
    for _ in range(3):
        created = await gql(
            "mutation($c: String!) { createNote(input: {content: $c}) { id } }", {"c": "x" * 2000}
        )
        assert "errors" not in created
    app = _app(runtime, max_response_bytes=4096)
    headers = {"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        query = "{ notes { edges { node { content } } } }"
        response = await client.post("/graphql", json={"query": query}, headers=headers)
        assert response.status_code == 200
        assert len(response.content) < 4096
        body = response.json()
        assert body["data"] is None
        assert error_codes(body) == ["RESPONSE_TOO_LARGE"]
        assert "FORTEMI_MAX_RESPONSE_BYTES" in body["errors"][0]["message"]
        small = await client.post(
            "/graphql", json={"query": "{ notes { totalCount } }"}, headers=headers
        )
        assert small.json() == {"data": {"notes": {"totalCount": 3}}}


async def test_a_million_ids_to_purge_are_refused_before_coercion(gql: GraphQLCall) -> None:
    ids = ["1"] * 1_500_000  # 6 MB of JSON, under the body limit
    body = await gql("mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }", {"ids": ids})
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert "FORTEMI_MAX_LIST_ITEMS" in body["errors"][0]["message"]


async def test_a_big_integer_literal_in_metadata_is_bad_user_input(
    gql: GraphQLCall, caplog: pytest.LogCaptureFixture
) -> None:
    body = await gql("mutation { createNote(input: {metadata: {n: " + "7" * 5000 + "}}) { id } }")
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert not [record for record in caplog.records if record.exc_info]
    assert (await gql("{ notes { totalCount } }"))["data"]["notes"]["totalCount"] == 0


async def test_a_websocket_message_over_the_limit_closes_the_socket(
    runtime: Runtime, user_token: str
) -> None:
    # uvicorn's own frame limit (16 MiB by default) is far above: the app's check acts.
    app = _app(runtime, max_ws_message_bytes=64 * 1024)
    async with serve(app) as address:
        url = f"ws://{address}/graphql"
        init = {"authorization": f"Bearer {user_token}"}
        async with connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": init}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
        async with connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            padded = {**init, "padding": "x" * (100 * 1024)}
            await ws.send(json.dumps({"type": "connection_init", "payload": padded}))
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1009
