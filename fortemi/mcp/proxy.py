"""``fortemi mcp``: MCP over stdio for local agents, relayed to a server's ``/mcp``.

A relay rather than a second server in the agent's process: the server at ``FORTEMI_URL``
already authenticates, authorizes and audits every call, so the stdio side cannot differ
from the HTTP side, needs no database of its own, and never holds more than the user's
own token (sent as the bearer of each request, as any HTTP client would). Every request
is forwarded as it came and every answer (results, tool errors, JSON-RPC errors with their
code) goes back as it was; a subscription is opened upstream for the same notes and its
events are passed on.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

__all__ = ["relay_stdio", "upstream"]

Context = ServerRequestContext[Any, Any]


@contextlib.asynccontextmanager
async def upstream(url: str, token: str, memory: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    if memory:
        headers["X-Fortemi-Memory"] = memory
    # No read deadline: a subscription's response stays open; a call ends when it answers.
    timeout = httpx2.Timeout(30, read=None)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        # No response cache: the relay passes each request on, so the agent sees what the
        # server answers now.
        Client(
            streamable_http_client(url.rstrip("/") + "/mcp", http_client=http), cache=None
        ) as client,
    ):
        yield client


def relay_server(client: Client) -> Server[Any]:
    bus = InMemorySubscriptionBus()
    listen = ListenHandler(bus)

    async def list_tools(ctx: Context, params: Any) -> types.ListToolsResult:
        return await client.list_tools()

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> Any:
        return await client.call_tool(params.name, params.arguments)

    async def list_resources(ctx: Context, params: Any) -> types.ListResourcesResult:
        return await client.list_resources()

    async def list_templates(ctx: Context, params: Any) -> types.ListResourceTemplatesResult:
        return await client.list_resource_templates()

    async def read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> Any:
        return await client.read_resource(str(params.uri))

    async def list_prompts(ctx: Context, params: Any) -> types.ListPromptsResult:
        return await client.list_prompts()

    async def get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> Any:
        return await client.get_prompt(params.name, params.arguments)

    async def listen_to(
        ctx: Context, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        uris = list(params.notifications.resource_subscriptions or ())
        # Upstream decides: it refuses a note the token may not read, before any ack here.
        result = types.SubscriptionsListenResult()
        async with (
            client.listen(resource_subscriptions=uris) as events,
            anyio.create_task_group() as tg,
        ):

            async def pump() -> None:
                async for event in events:
                    await bus.publish(event)

            tg.start_soon(pump)
            try:
                result = await listen(ctx, params)
            finally:
                tg.cancel_scope.cancel()
        return result

    return Server(
        "fortemi",
        version="1",
        title="Fortemi knowledge memory (stdio relay)",
        instructions=client.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscriptions_listen=listen_to,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def relay_stdio(url: str, token: str, memory: str | None) -> None:
    """Serve MCP on this process's stdin/stdout until the agent closes it."""
    async with upstream(url, token, memory) as client, stdio_server() as (read, write):
        server = relay_server(client)
        await server.run(read, write, server.create_initialization_options())
