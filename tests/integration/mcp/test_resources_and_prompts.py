"""Notes as MCP resources (read, listed, change notifications) and the prompts."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types import TextContent, TextResourceContents

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.ids import parse_note_id
from tests.integration.mcp.conftest import connect, structured

pytestmark = pytest.mark.live


async def _capture(client: Any, title: str, content: str, project: str = "p1") -> str:
    result = await client.call_tool(
        "capture_note", {"input": {"title": title, "content": content, "project": project}}
    )
    assert not result.is_error, result
    note_id: str = structured(result)["createNote"]["id"]
    return note_id


async def test_a_note_is_read_as_a_markdown_resource(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        note_id = await _capture(client, "Boiler", "Serviced in **March**.")
        uri = f"fortemi://{memory}/notes/{note_id}"
        read = await client.read_resource(uri)
        # The bare UUID names the same note, under the same URI.
        by_uuid = await client.read_resource(f"fortemi://{memory}/notes/{parse_note_id(note_id)}")
        listed = await client.list_resources()
    (contents,) = read.contents
    assert isinstance(contents, TextResourceContents)
    assert contents.mime_type == "text/markdown"
    assert contents.text == "# Boiler\n\nServiced in **March**."
    assert by_uuid.contents[0].uri == uri
    assert uri in [resource.uri for resource in listed.resources]


async def test_a_note_the_caller_may_not_read_is_not_found_as_a_missing_one(
    mcp_base: str, user_token: str, issuer: LocalIssuer, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        note_id = await _capture(client, "Private", "only for p1 readers")
    stranger = issuer.mint(f"stranger-{uuid.uuid4().hex[:6]}")  # no role: reads nothing
    async with connect(mcp_base, stranger, memory) as client:
        with pytest.raises(MCPError) as hidden:
            await client.read_resource(f"fortemi://{memory}/notes/{note_id}")
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"fortemi://{memory}/notes/{uuid.uuid4()}")
        with pytest.raises(MCPError) as malformed:
            await client.read_resource("fortemi://Bad/notes/x")
    assert hidden.value.data["code"] == missing.value.data["code"] == "NOT_FOUND"
    assert hidden.value.message.split(" in memory")[0].startswith("NOT_FOUND")
    assert malformed.value.data["code"] == "BAD_USER_INPUT"


async def test_a_subscribed_note_change_is_notified(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        note_id = await _capture(client, "Solar", "6 kWp")
        other_id = await _capture(client, "Wind", "none")
        uri = f"fortemi://{memory}/notes/{note_id}"
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            # A change to another note is not delivered; the subscribed one's is.
            await client.call_tool("update_note", {"id": other_id, "input": {"content": "2"}})
            await client.call_tool("update_note", {"id": note_id, "input": {"content": "8 kWp"}})
            with anyio.fail_after(60):  # a hang bound, not a performance check
                event = await subscription.__anext__()
    assert event == ResourceUpdated(uri)


async def test_subscribing_to_an_unreadable_note_is_refused(
    mcp_base: str, user_token: str, issuer: LocalIssuer, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        note_id = await _capture(client, "Secret", "s")
    stranger = issuer.mint(f"stranger-{uuid.uuid4().hex[:6]}")
    async with connect(mcp_base, stranger, memory) as client:
        with pytest.raises(MCPError) as refused:
            async with client.listen(
                resource_subscriptions=[f"fortemi://{memory}/notes/{note_id}"]
            ):
                pass
    assert refused.value.data["code"] == "NOT_FOUND"


async def test_prompts_are_listed_and_filled_from_the_memory(
    mcp_base: str, user_token: str, memory: str
) -> None:
    async with connect(mcp_base, user_token, memory) as client:
        note_id = await _capture(client, "Roof repair", "Tiles replaced", project="p2")
        listed = await client.list_prompts()
        answer = await client.get_prompt("answer_from_memory", {"question": "When was it?"})
        changes = await client.get_prompt("summarise_project_changes", {"project": "p2"})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("summarise_project_changes", {})
    assert {p.name for p in listed.prompts} == {"answer_from_memory", "summarise_project_changes"}
    (message,) = answer.messages
    assert isinstance(message.content, TextContent)
    assert "When was it?" in message.content.text
    assert "cite" in message.content.text
    (summary,) = changes.messages
    assert isinstance(summary.content, TextContent)
    assert f"Roof repair (id {note_id}, version 1" in summary.content.text
    assert missing.value.data["code"] == "BAD_USER_INPUT"
