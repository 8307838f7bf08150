"""The GraphQL endpoint: authentication at the transport, then Strawberry.

HTTP: every POST carries ``Authorization: Bearer <jwt>``; a missing or invalid token is
answered with HTTP 401, ``WWW-Authenticate`` and a GraphQL-shaped error body before the
operation is even parsed. GET serves only the GraphiQL page (outside production): queries
over GET are off, so no operation can ride on a link or a cross-site ``<img>``. Media
types, status codes and error bodies follow GraphQL over HTTP (see ``http.py``).

WebSocket (``graphql-transport-ws`` only): the token and memory come in the
``connection_init`` payload; a bad token closes the socket with 4403 before any operation.
The token's expiry bounds the socket (closed with 4403 at ``exp`` plus the leeway), and a
``ping`` may carry a fresh token for the same subject: see :mod:`fortemi.graphql.websocket`.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from fortemi.auth.principal import Principal
from fortemi.auth.tokens import bearer_token
from fortemi.graphql.context import Context
from fortemi.graphql.http import (
    GRAPHQL_RESPONSE_JSON,
    JSON,
    MalformedBody,
    ResponseTooLarge,
    decode_body,
    encode_bytes_within,
    error_document,
    is_request_error,
    preferred_media_type,
    too_large_document,
)
from fortemi.graphql.ide import GraphiQLPage
from fortemi.graphql.websocket import ExpiringTransportWSHandler, authorization_of
from fortemi.platform import logs
from fortemi.platform.errors import Unauthenticated

if TYPE_CHECKING:
    import strawberry

    from fortemi.graphql.services import Services

__all__ = ["GraphQLView"]

log = logging.getLogger(__name__)

MEMORY_HEADER = "x-fortemi-memory"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")


def _request_id() -> str:
    """The server's id of a request: the audit log's trace id, so never the client's."""
    return uuid.uuid4().hex


def _client_request_id(headers: Any) -> str | None:
    """The client's ``X-Request-Id`` when well-formed; recorded beside the trace id."""
    given = headers.get("x-request-id")
    return given if given and _REQUEST_ID.fullmatch(given) else None


def _unauthenticated_response(exc: Unauthenticated, request_id: str) -> Response:
    body = {
        "data": None,
        "errors": [
            {
                "message": exc.message,
                # extensions holds only the allow-listed failure (AuthFailure), never the
                # logged detail.
                "extensions": {**exc.extensions, "code": exc.code, "requestId": request_id},
            }
        ],
    }
    return Response(
        json.dumps(body),
        status_code=401,
        media_type="application/json",
        headers={
            "WWW-Authenticate": 'Bearer realm="fortemi", error="invalid_token"',
            "X-Request-Id": request_id,
        },
    )


_HTTP_CODES = {400: "BAD_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}


def _http_error(exc: HTTPException, media_type: str) -> Response:
    cause, status = exc.__cause__, exc.status_code
    if isinstance(cause, InvalidOperationTypeError):
        # An operation over GET: the method, not the request, is what is refused.
        status = 405
    if isinstance(cause, MalformedBody):
        body = error_document(cause.message, cause.code)
    else:
        body = error_document(exc.reason, _HTTP_CODES.get(status, "BAD_REQUEST"))
    # GET serves the GraphiQL page only: operations go by POST.
    headers = {"Allow": "POST"} if status == 405 else None
    return Response(json.dumps(body), status, headers=headers, media_type=media_type)


class GraphQLView(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = ExpiringTransportWSHandler

    def __init__(self, schema: strawberry.Schema, services: Services) -> None:
        settings = services.settings
        super().__init__(
            schema,
            graphql_ide=None if settings.is_production else "graphiql",
            allow_queries_via_get=False,
            keep_alive=True,
            keep_alive_interval=15,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=10),
            max_subscriptions_per_connection=settings.ws_max_subscriptions,
            # attachFile and createNoteFromFile: files by the GraphQL multipart request spec.
            # No cross-site request forgery follows from taking multipart/form-data (a
            # "simple" content type): every POST needs its bearer token, never a cookie.
            multipart_uploads_enabled=True,
        )
        self.services = services
        # Outside production GET serves GraphiQL from the package's own files (no CDN).
        self.ide = None if settings.is_production else GraphiQLPage()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            request = Request(scope)
            request_id = _request_id()
            logs.request_id.set(request_id)
            try:
                principal = await self.services.tokens.validate(
                    bearer_token(request.headers.get("authorization"))
                )
            except Unauthenticated as exc:
                # The detail is for the operator; the caller learns only which check failed.
                log.info("rejected request %s: %s", request_id, exc.reason)
                await _unauthenticated_response(exc, request_id)(scope, receive, send)
                return
            state = scope.setdefault("state", {})
            state["principal"] = principal
            state["request_id"] = request_id
        if scope["type"] == "http":
            await self._serve_http(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def render_graphql_ide(self, request: Request) -> Response:
        # Strawberry calls this only when graphql_ide is set, i.e. outside production.
        if self.ide is None:
            return Response(status_code=404)
        return self.ide.render(request.url.path)

    async def _serve_http(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Strawberry answers its HTTPExceptions in plain text; clients parse JSON.
        request = Request(scope, receive)
        try:
            response = await self.run(request)
        except HTTPException as exc:
            response = _http_error(exc, preferred_media_type(request.headers.get("accept")))
        finally:
            # A multipart request's files (spooled to disk past 1 MB) are removed here,
            # whatever became of the operation.
            await request.close()
        await response(scope, receive, send)

    def decode_json(self, data: str | bytes) -> object:
        return decode_body(data)

    def encode_json(self, data: object) -> str:
        return self.encode_json_bytes(data).decode()

    def encode_json_bytes(self, data: object) -> bytes:
        """The body of ``data``: UTF-8 JSON within the response size limit, else the
        ``RESPONSE_TOO_LARGE`` error in its place."""
        limit = self.services.settings.max_response_bytes
        try:
            return encode_bytes_within(data, limit)
        except ResponseTooLarge:
            log.warning("response over %d bytes abandoned", limit)
            return json.dumps(too_large_document(data, limit), separators=(",", ":")).encode()

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub_response = await super().get_sub_response(request)
        sub_response.media_type = preferred_media_type(request.headers.get("accept"))
        # process_result, which knows whether the operation ran, sets its status.
        request.state.sub_response = sub_response
        return sub_response

    async def process_result(self, request: Request, result: Any) -> Any:
        body = await super().process_result(request, result)
        sub_response: Response | None = getattr(request.state, "sub_response", None)
        if (
            sub_response is not None
            and sub_response.media_type == GRAPHQL_RESPONSE_JSON
            and is_request_error(result)
        ):
            # The operation never ran: a request error has no data entry, and is a 400.
            body.pop("data", None)
            sub_response.status_code = 400
        return body

    def create_response(self, response_data: Any, sub_response: Response) -> Response:
        response = Response(
            self.encode_json_bytes(response_data),
            status_code=sub_response.status_code or 200,
            media_type=sub_response.media_type or JSON,
        )
        response.headers.raw.extend(sub_response.headers.raw)
        response.background = sub_response.background
        return response

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        principal: Principal | None = getattr(request.state, "principal", None)
        request_id = getattr(request.state, "request_id", None) or _request_id()
        logs.request_id.set(request_id)
        return Context(
            services=self.services,
            request=request,
            request_id=request_id,
            client_request_id=_client_request_id(request.headers),
            response=response,
            principal=principal,
            memory_name=request.headers.get(MEMORY_HEADER),
        )

    async def on_ws_connect(self, context: Context) -> None:
        params = context.connection_params or {}
        try:
            context.principal = await self.services.tokens.validate(
                bearer_token(authorization_of(params))
            )
        except Unauthenticated as exc:
            log.info("rejected websocket %s: %s", context.request_id, exc.reason)
            raise ConnectionRejectionError from exc
        memory = params.get(MEMORY_HEADER) or params.get("X-Fortemi-Memory")
        if memory is not None:
            context.memory_name = str(memory)
