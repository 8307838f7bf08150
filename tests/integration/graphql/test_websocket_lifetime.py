"""A WebSocket holds only while its token does: closed at expiry, renewable by ping.

Served with a one-second leeway, so expiry comes a few seconds after minting.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import jwt
import pytest
import websockets

from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.support import graphql_ws as ws_client
from tests.support.live import serve

pytestmark = pytest.mark.live

LEEWAY = 1
# Long enough for the socket to be opened and used before expiry on a loaded machine.
SHORT = timedelta(seconds=5)


@pytest.fixture
async def server(runtime: Runtime) -> AsyncIterator[str]:
    """The app with a one-second token leeway, on its own port."""
    settings = runtime.settings.model_copy(update={"oidc_leeway_seconds": LEEWAY})
    async with serve(create_app(dataclasses.replace(runtime, settings=settings))) as address:
        yield address


def _exp(token: str) -> int:
    exp: int = jwt.decode(token, options={"verify_signature": False})["exp"]
    return exp


async def _sleep_past(moment: float) -> None:
    """Wait until the wall clock is a second past ``moment`` (the server's deadline)."""
    await asyncio.sleep(max(0.0, moment + 1 - time.time()))


async def test_the_socket_closes_with_4403_once_the_token_and_leeway_have_passed(
    server: str, issuer: LocalIssuer
) -> None:
    token = issuer.mint("erin", roles=["viewer"], ttl=SHORT)
    async with ws_client.socket(server, token) as ws:
        assert await ws_client.execute(ws, "1", "{ me { sub } }") == {"me": {"sub": "erin"}}
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws_client.read_until_closed(ws)
    closed_at = time.time()
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4403, "Token expired")
    # Not before the moment HTTP would refuse the token too.
    assert closed_at >= _exp(token) + LEEWAY


async def test_an_operation_sent_after_the_token_expired_does_not_run(
    server: str, issuer: LocalIssuer
) -> None:
    token = issuer.mint("erin", roles=["viewer"], ttl=SHORT)
    async with ws_client.socket(server, token) as ws:
        await _sleep_past(_exp(token) + LEEWAY)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            # Any answer would be the operation's result, run as erin.
            await ws_client.start(ws, "late", "{ me { sub } }")
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403


async def test_a_ping_with_a_fresh_token_for_the_same_subject_renews_the_socket(
    server: str, issuer: LocalIssuer
) -> None:
    short = issuer.mint("erin", roles=["viewer"], ttl=SHORT)
    fresh = issuer.mint("erin", roles=["editor"])
    async with ws_client.socket(server, short) as ws:
        await ws_client.ping(ws, fresh)
        pong = json.loads(await ws.recv())
        assert pong == {
            "type": "pong",
            "payload": {"expiresAt": datetime.fromtimestamp(_exp(fresh), UTC).isoformat()},
        }
        await _sleep_past(_exp(short) + LEEWAY)
        # Still open, and running as the fresh token says (its roles, its expiry).
        me = await ws_client.execute(ws, "1", "{ me { sub roles } }")
    assert me == {"me": {"sub": "erin", "roles": ["editor"]}}


async def test_a_renewed_socket_keeps_its_subscriptions_past_the_old_expiry(
    server: str, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    short = issuer.mint("erin", roles=["viewer"], ttl=SHORT)
    async with ws_client.socket(server, short, memory) as ws:
        await ws_client.subscribe(ws, "feed", "subscription { noteEvents { type } }")
        await ws_client.ping(ws, issuer.mint("erin", roles=["viewer"]))
        await _sleep_past(_exp(short) + LEEWAY)
        async with httpx.AsyncClient(base_url=f"http://{server}") as http:
            created = await http.post(
                "/graphql",
                json={"query": 'mutation { createNote(input: {title: "later"}) { id } }'},
                headers={"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory},
            )
        assert "errors" not in created.json()
        message = await ws_client.next_of(ws, "feed")
    assert message == {
        "id": "feed",
        "type": "next",
        "payload": {"data": {"noteEvents": {"type": "note.created"}}},
    }


@pytest.mark.parametrize(
    ("renewal", "reason"),
    [
        ("another", "Renewal token is for another subject"),
        ("garbage", "Token renewal refused"),
    ],
)
async def test_a_ping_with_an_unacceptable_token_closes_the_socket(
    server: str, issuer: LocalIssuer, renewal: str, reason: str
) -> None:
    token = issuer.mint("erin", roles=["viewer"])
    offered = issuer.mint("mallory", roles=["admin"]) if renewal == "another" else "not.a.jwt"
    async with ws_client.socket(server, token) as ws:
        await ws_client.ping(ws, offered)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws_client.read_until_closed(ws)
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4403, reason)


async def test_a_ping_without_a_token_is_answered_with_a_plain_pong(
    server: str, issuer: LocalIssuer
) -> None:
    async with ws_client.socket(server, issuer.mint("erin", roles=["viewer"])) as ws:
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv()) == {"type": "pong"}
        assert await ws_client.execute(ws, "1", "{ me { sub } }") == {"me": {"sub": "erin"}}
