"""``fortemi mcp`` over stdio, started as a subprocess by the SDK's client (which stops it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from fortemi.auth.local_issuer import LocalIssuer
from tests.integration.mcp.conftest import structured
from tests.integration.mcp.test_streamable_http import TOOL_NAMES

pytestmark = pytest.mark.live


def _environment(base: str, token: str | None, memory: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    env.update({"FORTEMI_URL": base, "FORTEMI_MEMORY": memory})
    if token is not None:
        env["FORTEMI_TOKEN"] = token
    return env


@contextlib.asynccontextmanager
async def stdio(base: str, token: str, memory: str) -> AsyncIterator[Client]:
    command = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fortemi", "mcp"],
        env=_environment(base, token, memory),
    )
    async with Client(command) as client:
        yield client


async def test_stdio_lists_and_calls_tools_as_the_token_user(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with stdio(mcp_base, user_token, memory) as client:
        tools = await client.list_tools()
        captured = await client.call_tool(
            "capture_note", {"input": {"title": "Stdio", "content": "over pipes", "project": "p1"}}
        )
        note_id = structured(captured)["createNote"]["id"]
        got = await client.call_tool("get_note", {"id": note_id})
        missing = await client.call_tool("get_note", {"id": str(uuid.uuid4())})
    assert {tool.name for tool in tools.tools} == TOOL_NAMES
    assert structured(got)["note"]["content"] == "over pipes"
    assert missing.is_error
    assert structured(missing)["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_stdio_passes_on_a_refusal(mcp_base: str, issuer: LocalIssuer, memory: str) -> None:
    viewer = issuer.mint(f"viewer-{uuid.uuid4().hex[:8]}", roles=["viewer"])
    async with stdio(mcp_base, viewer, memory) as client:
        refused = await client.call_tool(
            "capture_note", {"input": {"title": "x", "content": "y", "project": "p1"}}
        )
        with pytest.raises(MCPError) as unreadable:
            await client.read_resource(f"fortemi://{memory}/notes/{uuid.uuid4()}")
    assert structured(refused)["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert unreadable.value.data["code"] == "NOT_FOUND"


async def test_stdio_relays_a_subscribed_note_change(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with stdio(mcp_base, user_token, memory) as client:
        captured = await client.call_tool(
            "capture_note", {"input": {"title": "Relay", "content": "1", "project": "p1"}}
        )
        uri = f"fortemi://{memory}/notes/{structured(captured)['createNote']['id']}"
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            note_id = structured(captured)["createNote"]["id"]
            await client.call_tool("update_note", {"id": note_id, "input": {"content": "2"}})
            with anyio.fail_after(60):  # a hang bound, not a performance check
                event = await subscription.__anext__()
    assert event == ResourceUpdated(uri)


async def test_stdio_without_a_token_says_what_is_missing(mcp_base: str, memory: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fortemi",
        "mcp",
        env=_environment(mcp_base, None, memory),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await process.communicate()
    assert process.returncode == 1
    assert stdout == b""
    assert b"FORTEMI_TOKEN" in stderr
