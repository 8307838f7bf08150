"""The MCP server: Fortemi's tools, note resources and prompts, over the official SDK's
low-level :class:`mcp.server.lowlevel.Server`.

Every handler runs as the principal of the HTTP request that carried it (see
:mod:`fortemi.mcp.http`) through :class:`~fortemi.mcp.gateway.Gateway`. A tool's failure
is a tool result with ``isError`` and the GraphQL error (message and ``extensions.code``)
as its structured content, so a model can read and correct it; a resource or prompt
failure is a JSON-RPC error carrying the same code in its ``data``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
import strawberry
from graphql import OperationDefinitionNode, parse
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from fortemi.graphql.services import Services
from fortemi.mcp.feed import NoteFeed
from fortemi.mcp.gateway import Gateway, Outcome, bad_input, not_found
from fortemi.mcp.jobs import MAX_WAIT_SECONDS, RECHECK_SECONDS, follow_job, job_ended
from fortemi.mcp.prompts import PROMPTS, render_prompt
from fortemi.mcp.resources import NoteUri, read_note, recent_notes
from fortemi.mcp.schemas import input_schema, output_schema
from fortemi.mcp.tools import TOOLS, ToolSpec

__all__ = ["build_server"]

_MEMORY_ARGUMENT = {
    "type": "string",
    "description": "The memory to work in (see list_memories); default: your default memory",
}
INSTRUCTIONS = (
    "Fortemi is the user's knowledge memory. Search it (search_notes) or ask it "
    "(ask_memory) before answering from general knowledge; capture what is worth keeping "
    "(capture_note). Cite notes by their fortemi://<memory>/notes/<id> resource URI."
)


def _request(ctx: ServerRequestContext[Any, Any]) -> Request:
    request = ctx.request
    if not isinstance(request, Request):
        raise MCPError(types.INVALID_REQUEST, "Fortemi serves MCP over HTTP only")
    return request


def _tool(schema: strawberry.Schema, spec: ToolSpec) -> types.Tool:
    (operation,) = parse(spec.document).definitions
    if not isinstance(operation, OperationDefinitionNode):  # a document of ours: a bug
        raise TypeError(f"{spec.name}: not an operation")
    inputs = input_schema(schema._schema, operation, spec.descriptions)
    inputs["properties"].update(spec.extra)
    inputs["properties"]["memory"] = _MEMORY_ARGUMENT
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=inputs,
        output_schema=output_schema(schema._schema, operation),
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=spec.read_only,
            open_world_hint=False,
        ),
    )


def _result(gateway: Gateway, spec: ToolSpec, outcome: Outcome) -> types.CallToolResult:
    if not outcome.failed and spec.required_result is not None:
        if (outcome.data or {}).get(spec.required_result) is None:
            what = spec.required_result
            outcome = Outcome(None, [not_found(f"No {what} with that id that you may read")])
    text, outcome = gateway.within_limit(outcome)
    if outcome.failed:
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content={"errors": outcome.errors},
            is_error=True,
        )
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=outcome.data or {}
    )


async def _waited(
    ctx: ServerRequestContext[Any, Any],
    services: Services,
    run: Callable[[], Awaitable[Outcome]],
    outcome: Outcome,
    seconds: int,
) -> Outcome:
    """The job read again until it has ended or ``seconds`` have passed."""
    token = (ctx.meta or {}).get("progress_token")

    async def progress(done: float, message: str | None) -> None:
        if token is not None:
            await ctx.session.send_progress_notification(
                token,
                done,
                100,
                message,
                # The id as the request carried it (an int stays an int), as the SDK's own
                # ListenHandler passes it: the transport routes by it; the hint says str.
                related_request_id=ctx.request_id,  # type: ignore[arg-type]
            )

    deadline = time.monotonic() + seconds
    while not outcome.failed and not job_ended(outcome.data):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        job_id = str((outcome.data or {}).get("job", {}).get("id", ""))
        await follow_job(services.events, job_id, min(left, RECHECK_SECONDS), progress)
        outcome = await run()
    return outcome


def build_server(schema: strawberry.Schema, services: Services) -> tuple[Server[Any], NoteFeed]:
    """The server, and the feed of note changes to its subscribers (stopped by its owner)."""
    gateway = Gateway(schema, services)
    specs = {spec.name: spec for spec in TOOLS}
    tools = [_tool(schema, spec) for spec in TOOLS]
    bus = InMemorySubscriptionBus()
    listen = ListenHandler(bus)
    feed = NoteFeed(services.events, bus)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"No tool {params.name!r}; see tools/list")
        arguments = dict(params.arguments or {})
        memory = arguments.pop("memory", None)
        extra = {name: arguments.pop(name) for name in spec.extra if name in arguments}
        request = _request(ctx)

        async def run() -> Outcome:
            return await gateway.run(
                request,
                spec.name,
                spec.document,
                arguments,
                memory=memory if isinstance(memory, str) else None,
                audit_name=f"mcp:{spec.name}",
            )

        outcome = await run()
        wait = extra.get("waitSeconds", 0)
        if spec.name == "job_status" and wait:
            if not isinstance(wait, int) or not 0 <= wait <= MAX_WAIT_SECONDS:
                raise bad_input(f"waitSeconds must be a whole number 0..{MAX_WAIT_SECONDS}")
            outcome = await _waited(ctx, services, run, outcome, wait)
        return _result(gateway, spec, outcome)

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await recent_notes(gateway, _request(ctx)))

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="note",
                    uri_template=NoteUri.TEMPLATE,
                    description="A note of a memory, as markdown",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = NoteUri.parse(str(params.uri))
        contents = await read_note(gateway, _request(ctx), uri, audit_name="mcp:resources/read")
        return types.ReadResourceResult(contents=[contents])

    async def listen_to(
        ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        # A subscription is a read: each note must be readable now (NOT_FOUND otherwise,
        # so a subscription cannot probe for notes), and the stream lasts no longer than
        # the token that opened it (see fortemi.mcp.http).
        request = _request(ctx)
        for uri in params.notifications.resource_subscriptions or ():
            await read_note(
                gateway, request, NoteUri.parse(uri), audit_name="mcp:subscriptions/listen"
            )
        return await listen(ctx, params)

    async def list_prompts(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt for prompt, _ in PROMPTS.values()])

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await render_prompt(gateway, _request(ctx), params.name, params.arguments or {})

    server: Server[Any] = Server(
        "fortemi",
        version="1",
        title="Fortemi knowledge memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscriptions_listen=listen_to,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    return server, feed
