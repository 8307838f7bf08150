"""The ASGI application: GraphQL, MCP, health probes, GraphiQL's files and (embedded
default) the local issuer."""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fortemi.graphql.downloads import attachment_routes
from fortemi.graphql.picture import GraphPicturePage
from fortemi.graphql.schema import build_schema
from fortemi.graphql.shard_download import shard_download_route
from fortemi.graphql.view import GraphQLView
from fortemi.http_metrics import RequestMetrics, metrics_endpoint
from fortemi.mcp.http import McpEndpoint
from fortemi.runtime import Runtime

__all__ = [
    "UPLOAD_OVERHEAD_BYTES",
    "BodySizeLimit",
    "WebSocketMessageLimit",
    "create_app",
    "settle_heap",
]

# CPython's default first-generation threshold, 700 allocations, ran a young collection
# every few hundred objects a request makes: a graph(depth 3, maxNodes 200) response
# builds tens of thousands. Measured in process over 100 such requests at 10k notes: 438
# young collections (2.5 ms a request), 40 middle ones and 2 full ones of 290 ms each
# (the 180k objects of the schema, the model and the pools, walked again for nothing);
# after settle_heap, 2 young collections in all (0.2 ms a request) and no full one.
_YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Once the server's long-lived objects exist (runtime, schema, app): collect, then
    freeze them out of the collector's reach (``gc.freeze``), and collect the young
    generation less often. Garbage cycles are still collected; only the pointless
    re-walks of objects that live as long as the process are gone."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(_YOUNG_THRESHOLD, middle, old)


# A multipart upload's body is its file plus the operation, the map and the part headers.
UPLOAD_OVERHEAD_BYTES = 1_048_576


class BodySizeLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before anything parses them.

    A pure ASGI middleware (BaseHTTPMiddleware would break contextvars): it trusts a
    Content-Length that is too big, and counts chunks for bodies sent without one.
    ``upload_limit``: the bound of ``multipart/form-data`` bodies (file uploads, streamed
    to disk, never held whole), refused with BAD_USER_INPUT ``file_too_large``; a file
    under it but over the upload limit is refused by the upload itself, the same way.
    """

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int | None = None) -> None:
        self.app = app
        self.limit = limit
        self.upload_limit = upload_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, upload = self.limit, False
        for name, value in scope["headers"]:
            if (
                name == b"content-type"
                and self.upload_limit is not None
                and value.lower().startswith(b"multipart/form-data")
            ):
                limit, upload = max(self.limit, self.upload_limit), True
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await self._reject(scope, receive, send, limit, upload)
                return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._reject(scope, receive, send, limit, upload)

    async def _reject(
        self, scope: Scope, receive: Receive, send: Send, limit: int, upload: bool
    ) -> None:
        if upload:
            error = {
                "message": f"The upload is over the {limit}-byte limit "
                "(FORTEMI_MAX_UPLOAD_BYTES and the request's own parts)",
                "extensions": {"code": "BAD_USER_INPUT", "reason": "file_too_large"},
            }
        else:
            error = {
                "message": f"Request body is over the {limit}-byte limit "
                "(FORTEMI_MAX_REQUEST_BYTES)",
                "extensions": {"code": "PAYLOAD_TOO_LARGE"},
            }
        body = json.dumps({"errors": [error]})
        await Response(body, 413, media_type="application/json")(scope, receive, send)


class _TooLarge(Exception):
    pass


class WebSocketMessageLimit:
    """Close a WebSocket with 1009 (message too big) when a client sends over ``limit`` bytes.

    uvicorn's ``ws_max_size`` refuses such frames before they are buffered whole (``fortemi
    serve`` sets it); this holds the same bound under any ASGI server, before the message is
    parsed. The app sees the client go; whatever it sends after that is dropped.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        closed = False

        async def limited() -> Message:
            nonlocal closed
            message = await receive()
            if message["type"] == "websocket.receive" and self._too_big(message):
                closed = True
                await send({"type": "websocket.close", "code": 1009, "reason": "message too big"})
                return {"type": "websocket.disconnect", "code": 1009}
            return message

        async def guarded(message: Message) -> None:
            if not closed:
                await send(message)

        await self.app(scope, limited, guarded)

    def _too_big(self, message: Message) -> bool:
        data = message.get("bytes")
        if data is not None:
            return len(data) > self.limit
        text: str = message.get("text") or ""
        # A character is 1 to 4 bytes: encode only when the count alone cannot decide.
        if len(text) > self.limit or len(text) * 4 <= self.limit:
            return len(text) > self.limit
        return len(text.encode("utf-8")) > self.limit


def create_app(runtime: Runtime) -> Starlette:
    """The HTTP/WebSocket app over an open runtime (its owner closes it)."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        checks = await runtime.readiness()
        ready = all(value == "ok" for value in checks.values())
        # A policy file that fails to load does not make the server unready (the last
        # good set stays in force), but operators must see it: it is listed here.
        policies = await runtime.policies.snapshot()
        details = {
            "policies": {
                "version": policies.version,
                "errors": [str(error) for error in policies.errors],
            }
        }
        return JSONResponse(
            {"status": "ok" if ready else "unavailable", "checks": checks, "details": details},
            status_code=200 if ready else 503,
        )

    schema = build_schema(runtime.settings)
    graphql = GraphQLView(schema, runtime.services)
    # MCP tools run their operations through the same schema (see fortemi.mcp.gateway).
    mcp = McpEndpoint(schema, runtime.services)
    routes: list[BaseRoute] = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics_endpoint(runtime)),
        Route("/graphql", graphql),
        shard_download_route(runtime.services),
        WebSocketRoute("/graphql", graphql),
        *attachment_routes(runtime.services),
        *mcp.routes(),
    ]
    if graphql.ide is not None:
        routes.extend(graphql.ide.routes())
    routes.extend(GraphPicturePage().routes())
    if runtime.issuer is not None:
        routes.extend(runtime.issuer.routes())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # MCP's sessions and its note feed live as long as the server serves.
        async with mcp.running():
            yield

    return Starlette(
        lifespan=lifespan,
        routes=routes,
        middleware=[
            Middleware(RequestMetrics),
            Middleware(
                BodySizeLimit,
                limit=runtime.settings.max_request_bytes,
                upload_limit=runtime.settings.max_upload_bytes + UPLOAD_OVERHEAD_BYTES,
            ),
            Middleware(WebSocketMessageLimit, limit=runtime.settings.max_ws_message_bytes),
        ],
    )
