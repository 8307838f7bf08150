"""A third-party client: the MCP Inspector's CLI (Node), over Streamable HTTP with a token.

Its npm packages are pinned by tests/mcp-inspector/package-lock.json and installed by
``make .venv/.dev`` (``npm ci``), as the GraphQL-over-HTTP audit's are.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.integration.mcp.test_streamable_http import TOOL_NAMES

pytestmark = pytest.mark.live

INSPECTOR_DIR = Path(__file__).resolve().parents[2] / "mcp-inspector"
INSPECTOR = INSPECTOR_DIR / "node_modules" / ".bin" / "mcp-inspector"


async def _inspect(base: str, token: str, memory: str, home: Path, *args: str) -> Any:
    assert INSPECTOR.exists(), (
        "the MCP Inspector is not installed: run `make .venv/.dev` (npm ci in "
        "tests/mcp-inspector; it needs npm and access to the npm registry)"
    )
    process = await asyncio.create_subprocess_exec(
        str(INSPECTOR),
        "--cli",
        f"{base}/mcp",
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {token}",
        "--header",
        f"X-Fortemi-Memory: {memory}",
        *args,
        # The Inspector keeps a catalog of servers: in the test's directory, not the home.
        env={**os.environ, "MCP_CATALOG_PATH": str(home / "mcp.json"), "HOME": str(home)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return json.loads(out)


async def test_the_inspector_lists_and_calls_the_tools_with_a_token(
    mcp_base: str, user_token: str, memory: str, tmp_path: Path
) -> None:
    listed = await _inspect(mcp_base, user_token, memory, tmp_path, "--method", "tools/list")
    called = await _inspect(
        mcp_base,
        user_token,
        memory,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "search_notes",
        "--tool-arg",
        "query=inspector",
    )
    assert {tool["name"] for tool in listed["tools"]} == TOOL_NAMES
    assert called.get("isError") is not True, called
    assert called["structuredContent"]["search"]["hits"] == []
