"""A live uvicorn port, spoken to by the `gql` client over HTTP and graphql-transport-ws."""

from __future__ import annotations

import json

import httpx
import pytest
import websockets
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXAsyncTransport
from gql.transport.websockets import WebsocketsTransport

pytestmark = pytest.mark.live


async def test_gql_client_creates_and_reads_a_note_over_http(
    live_server: str, user_token: str, memory: str
) -> None:
    transport = HTTPXAsyncTransport(
        url=f"http://{live_server}/graphql",
        headers={"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory},
    )
    async with Client(transport=transport, fetch_schema_from_transport=True) as session:
        created = await session.execute(
            gql('mutation { createNote(input: {title: "live", content: "over a socket"}) { id } }')
        )
        note_id = created["createNote"]["id"]
        query = gql("query($id: ID!) { note(id: $id) { title content version } }")
        query.variable_values = {"id": note_id}
        read = await session.execute(query)
    assert read["note"] == {"title": "live", "content": "over a socket", "version": 1}


async def test_gql_client_without_token_gets_401(live_server: str) -> None:
    transport = HTTPXAsyncTransport(url=f"http://{live_server}/graphql")
    with pytest.raises(TransportQueryError) as raised:
        async with Client(transport=transport) as session:
            await session.execute(gql("{ me { sub } }"))
    assert raised.value.errors is not None
    assert raised.value.errors[0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_websocket_operations_use_the_connection_init_token_and_memory(
    live_server: str, user_token: str, memory: str
) -> None:
    transport = WebsocketsTransport(
        url=f"ws://{live_server}/graphql",
        init_payload={"authorization": f"Bearer {user_token}", "x-fortemi-memory": memory},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
    )
    async with Client(transport=transport) as session:
        me = await session.execute(gql("{ me { sub } }"))
        created = await session.execute(
            gql('mutation { createNote(input: {title: "ws"}) { title } }')
        )
        count = await session.execute(gql("{ notes { totalCount } }"))
    assert me == {"me": {"sub": "alice"}}
    assert created == {"createNote": {"title": "ws"}}
    assert count == {"notes": {"totalCount": 1}}


@pytest.mark.parametrize("payload", [{}, {"authorization": "Bearer garbage"}])
async def test_websocket_without_a_valid_token_is_closed_before_any_operation(
    live_server: str, payload: dict[str, str]
) -> None:
    async with websockets.connect(
        f"ws://{live_server}/graphql",
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403


async def test_legacy_graphql_ws_protocol_is_refused(live_server: str) -> None:
    async with websockets.connect(
        f"ws://{live_server}/graphql",
        subprotocols=["graphql-ws"],  # type: ignore[list-item]
    ) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert ws.subprotocol is None
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4406


async def test_discovery_is_served_on_the_live_port(live_server: str) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://{live_server}/.well-known/openid-configuration")
    assert response.status_code == 200
    assert "jwks_uri" in response.json()
