"""An MCP stream holds only while its token does. Served with a one-second leeway, so
expiry comes a few seconds after minting."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import jwt
import pytest
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost

from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.mcp.conftest import connect, structured
from tests.support.live import serve

pytestmark = pytest.mark.live

LEEWAY = 1
# Long enough for the stream to be opened before expiry on a loaded machine.
SHORT = timedelta(seconds=5)


@pytest.fixture
async def base(runtime: Runtime) -> AsyncIterator[str]:
    settings = runtime.settings.model_copy(update={"oidc_leeway_seconds": LEEWAY})
    app = create_app(dataclasses.replace(runtime, settings=settings))
    async with serve(app, lifespan=True) as address:
        yield f"http://{address}"


async def _follow(client: Client, uri: str) -> None:
    """Read the subscription's events until its stream ends."""
    async with client.listen(resource_subscriptions=[uri]) as subscription:
        async for _ in subscription:
            pass


async def test_a_subscription_stream_ends_when_its_token_expires(
    base: str, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    async with connect(base, user_token, memory) as client:
        captured = await client.call_tool(
            "capture_note", {"input": {"title": "Expiry", "content": "x", "project": "p1"}}
        )
    uri = f"fortemi://{memory}/notes/{structured(captured)['createNote']['id']}"
    token = issuer.mint("alice", groups=["data-team"], roles=["editor"], ttl=SHORT)
    expires: int = jwt.decode(token, options={"verify_signature": False})["exp"]
    async with connect(base, token, memory) as client:
        with pytest.raises(SubscriptionLost):
            await _follow(client, uri)
    # Not before the moment a new request with that token would be refused.
    assert time.time() >= expires + LEEWAY
