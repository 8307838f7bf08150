"""The real app served by uvicorn with its lifespan (which runs MCP), and SDK clients."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fortemi.app import create_app
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import (  # noqa: F401 - fixtures shared with GraphQL's
    _free_port,
    admin_token,
    issuer,
    memory,
    runtime,
    user_token,
)


@pytest.fixture(scope="session")
async def mcp_base(runtime: Runtime) -> AsyncIterator[str]:  # noqa: F811
    """A server of its own (the app's lifespan runs once per app) on a loopback port."""
    port = _free_port()
    config = uvicorn.Config(
        create_app(runtime), host="127.0.0.1", port=port, lifespan="on", log_level="warning"
    )
    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


@contextlib.asynccontextmanager
async def connect(base: str, token: str, memory: str | None = None) -> AsyncIterator[Client]:  # noqa: F811
    """An SDK client over Streamable HTTP with the token (and memory) on every request."""
    headers = {"Authorization": f"Bearer {token}"}
    if memory is not None:
        headers["X-Fortemi-Memory"] = memory
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


def structured(result: Any) -> dict[str, Any]:
    value = result.structured_content
    assert isinstance(value, dict), result
    return value
