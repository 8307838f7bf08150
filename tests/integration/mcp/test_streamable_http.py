"""The MCP server over Streamable HTTP, with the SDK's own client, against the served app."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from mcp_types import TextContent

from fortemi.auth.audit.models import AuditFilter
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.mcp.conftest import connect, structured

pytestmark = pytest.mark.live

TOOL_NAMES = {
    "list_memories",
    "capture_note",
    "update_note",
    "get_note",
    "search_notes",
    "retrieve_context",
    "ask_memory",
    "upsert_external_notes",
    "note_links",
    "explore_graph",
    "note_concepts",
    "search_concepts",
    "reprocess_notes",
    "job_status",
}


async def _capture(client: Any, title: str, content: str) -> dict[str, Any]:
    result = await client.call_tool(
        "capture_note", {"input": {"title": title, "content": content, "project": "p1"}}
    )
    assert not result.is_error, result
    note: dict[str, Any] = structured(result)["createNote"]
    return note


async def test_tools_are_listed_with_input_schemas_from_graphql(
    mcp_base: str, user_token: str
) -> None:
    async with connect(mcp_base, user_token) as client:
        listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOL_NAMES
    search = tools["search_notes"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["mode"] == {
        "type": "string",
        "enum": ["HYBRID", "LEXICAL", "SEMANTIC"],
        "default": "HYBRID",
    }
    assert "requiredTags" in search["properties"]["filter"]["properties"]
    assert search["properties"]["memory"]["type"] == "string"
    assert all(tool.description for tool in listed.tools)
    # The output schema is the operation's data; the SDK client checks each result with it.
    output = tools["search_notes"].output_schema
    assert output is not None
    hit = output["properties"]["search"]["properties"]["hits"]["items"]
    assert hit["properties"]["score"] == {"type": "number"}
    assert hit["properties"]["chunk"] == {"type": ["string", "null"]}
    assert tools["capture_note"].annotations is not None
    assert tools["capture_note"].annotations.read_only_hint is False


async def test_notes_are_captured_updated_read_with_versions_and_found(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        note = await _capture(client, "Heat pumps", "The heat pump defrosts every 40 minutes.")
        updated = await client.call_tool(
            "update_note",
            {"id": note["id"], "input": {"content": "It defrosts every 55 minutes now."}},
        )
        assert not updated.is_error, updated
        assert structured(updated)["updateNote"]["version"] == 2
        got = structured(await client.call_tool("get_note", {"id": note["id"]}))
        found = await client.call_tool(
            "search_notes", {"query": "defrosts", "mode": "LEXICAL", "explain": True}
        )
    assert got["note"]["content"] == "It defrosts every 55 minutes now."
    assert [v["version"] for v in got["noteVersions"]] == [1, 2]
    hits = structured(found)["search"]["hits"]
    assert [hit["note"]["id"] for hit in hits] == [note["id"]]
    assert hits[0]["explain"]["lexicalRank"] == 1


async def test_a_tool_error_carries_the_graphql_code(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        missing = await client.call_tool("get_note", {"id": str(uuid.uuid4())})
        malformed = await client.call_tool("get_note", {"id": "not-an-id"})
        note = await _capture(client, "Versioned", "one")
        stale = await client.call_tool(
            "update_note", {"id": note["id"], "input": {"content": "two", "expectedVersion": 7}}
        )
    for result, code in (
        (missing, "NOT_FOUND"),
        (malformed, "BAD_USER_INPUT"),
        (stale, "CONFLICT"),
    ):
        assert result.is_error
        errors = structured(result)["errors"]
        assert errors[0]["extensions"]["code"] == code, errors
        assert errors[0]["message"]
        (text,) = result.content
        assert isinstance(text, TextContent)
        assert code in text.text


async def test_an_unauthorised_call_is_refused_and_audited_with_the_tool_name(
    mcp_base: str, issuer: LocalIssuer, memory: str, runtime: Runtime
) -> None:
    sub = f"viewer-{uuid.uuid4().hex[:8]}"
    viewer = issuer.mint(sub, roles=["viewer"])
    async with connect(mcp_base, viewer, memory) as client:
        refused = await client.call_tool(
            "capture_note", {"input": {"title": "x", "content": "y", "project": "p1"}}
        )
        allowed = await client.call_tool("list_memories", {})
    assert refused.is_error
    assert structured(refused)["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert not allowed.is_error
    page = await runtime.services.audit.page(
        AuditFilter(memory=memory, decision="deny", user_id=sub), first=20, after=None
    )
    denied = [entry.record for _, entry in page.items]
    assert any(
        r.action == "write" and r.details.get("operation") == "mcp:capture_note" for r in denied
    ), denied


async def test_an_unknown_memory_is_not_found_like_in_graphql(
    mcp_base: str, user_token: str
) -> None:
    async with connect(mcp_base, user_token, "no_such_memory") as client:
        result = await client.call_tool("search_notes", {"query": "anything"})
    assert structured(result)["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_without_a_token_401_points_at_the_protected_resource_metadata(
    mcp_base: str, runtime: Runtime
) -> None:
    async with httpx.AsyncClient(base_url=mcp_base) as http:
        bare = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        forged = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Authorization": "Bearer not.a.token"},
        )
        metadata_url = f"{mcp_base}/.well-known/oauth-protected-resource/mcp"
        metadata = (await http.get(metadata_url)).json()
        root = (await http.get("/.well-known/oauth-protected-resource")).json()
    assert bare.status_code == 401
    assert bare.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
    assert forged.status_code == 401
    assert 'error="invalid_token"' in forged.headers["www-authenticate"]
    assert metadata == root
    assert metadata["resource"] == f"{mcp_base}/mcp"
    assert metadata["authorization_servers"] == [runtime.settings.issuer]


async def test_a_client_of_the_2025_handshake_is_served_as_well(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory, mode="legacy") as client:
        version = client.protocol_version
        tools = await client.list_tools()
        note = await _capture(client, "Legacy", "handshake era")
        got = await client.call_tool("get_note", {"id": note["id"]})
    assert version.startswith("2025-")
    assert {tool.name for tool in tools.tools} == TOOL_NAMES
    assert structured(got)["note"]["content"] == "handshake era"
