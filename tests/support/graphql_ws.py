"""A raw graphql-transport-ws client for tests that look at the protocol itself: pings,
close codes, and what arrives (or not) for one operation id."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

HANG_GUARD = 60  # seconds; not a speed check: only stops a test that would wait forever


@asynccontextmanager
async def socket(
    server: str, token: str, memory: str | None = None
) -> AsyncIterator[ClientConnection]:
    """An acknowledged connection to ``server`` as ``token`` (in ``memory``)."""
    payload = {"authorization": f"Bearer {token}"}
    if memory is not None:
        payload["x-fortemi-memory"] = memory
    async with websockets.connect(
        f"ws://{server}/graphql",
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        yield ws


async def subscribe(ws: ClientConnection, op: str, query: str) -> None:
    await ws.send(json.dumps({"id": op, "type": "subscribe", "payload": {"query": query}}))


async def next_of(ws: ClientConnection, op: str, *, wait: float = HANG_GUARD) -> dict[str, Any]:
    """The next message about operation ``op`` (pongs and others' skipped); TimeoutError
    if none within ``wait`` seconds."""
    async with asyncio.timeout(wait):
        while True:
            message: dict[str, Any] = json.loads(await ws.recv())
            if message.get("id") == op:
                return message


async def start(ws: ClientConnection, op: str, query: str) -> dict[str, Any]:
    """Send operation ``op`` and return the first message about it."""
    await subscribe(ws, op, query)
    return await next_of(ws, op)


async def execute(ws: ClientConnection, op: str, query: str) -> Any:
    """The data of a query or mutation run over the socket (asserted error-free)."""
    message = await start(ws, op, query)
    assert message["type"] == "next", message
    assert "errors" not in message["payload"], message
    assert (await next_of(ws, op))["type"] == "complete"
    return message["payload"]["data"]


async def read_until_closed(ws: ClientConnection) -> None:
    """Read (and drop) messages until the server closes the socket: ConnectionClosed."""
    async with asyncio.timeout(HANG_GUARD):
        while True:
            await ws.recv()


async def ping(ws: ClientConnection, token: str) -> None:
    """A ping carrying a renewal token."""
    await ws.send(json.dumps({"type": "ping", "payload": {"authorization": f"Bearer {token}"}}))
