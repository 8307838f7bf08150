"""The real app served by uvicorn with its lifespan (which runs MCP), and SDK clients."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fortemi.app import create_app
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import (  # noqa: F401 - fixtures shared with GraphQL's
    admin_token,
    issuer,
    memory,
    runtime,
    user_token,
)
from tests.support.live import serve


@pytest.fixture(scope="session")
async def mcp_base(runtime: Runtime) -> AsyncIterator[str]:  # noqa: F811
    """A server of its own (the app's lifespan runs once per app) on a loopback port."""
    async with serve(create_app(runtime), lifespan=True) as address:
        yield f"http://{address}"


@contextlib.asynccontextmanager
async def connect(
    base: str,
    token: str,
    memory: str | None = None,  # noqa: F811
    *,
    mode: Any = "auto",
) -> AsyncIterator[Client]:
    """An SDK client over Streamable HTTP with the token (and memory) on every request."""
    headers = {"Authorization": f"Bearer {token}"}
    if memory is not None:
        headers["X-Fortemi-Memory"] = memory
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def structured(result: Any) -> dict[str, Any]:
    value = result.structured_content
    assert isinstance(value, dict), result
    return value
