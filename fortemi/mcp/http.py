"""MCP over Streamable HTTP at ``/mcp``: Fortemi as an OAuth 2.1 protected resource.

As the MCP authorization specification asks (RFC 9728 and RFC 6750):

* ``/.well-known/oauth-protected-resource`` (and the same under ``/mcp``) names this
  resource and the OIDC issuer that grants tokens for it: ``OIDC_ISSUER``, or the embedded
  default's local issuer;
* a request without a valid token is answered ``401`` with ``WWW-Authenticate: Bearer
  resource_metadata="..."`` pointing at that document;
* a token is accepted only if the validator GraphQL uses accepts it (signature, issuer,
  audience, expiry). It is checked on every request, and a response that streams (a
  subscription) ends when the token expires: a session outlives no token. Tools act as
  the token's principal, never as a service account, and the token goes no further.

A session belongs to the principal that opened it (the SDK answers 404 to anyone else).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator

import anyio
import strawberry
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from fortemi.auth.principal import Principal
from fortemi.auth.tokens import bearer_token
from fortemi.graphql.services import Services
from fortemi.mcp.server import build_server
from fortemi.platform.errors import Unauthenticated

__all__ = ["MCP_PATH", "McpEndpoint"]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"


class McpEndpoint:
    """The ``/mcp`` ASGI endpoint and its metadata routes. :meth:`running` must be
    entered (the app's lifespan does) before it serves: it owns the SDK's session task
    group and stops the feed of note changes to subscribers."""

    def __init__(self, schema: strawberry.Schema, services: Services) -> None:
        self.services = services
        self.server, self.feed = build_server(schema, services)
        settings = services.settings
        # No DNS-rebinding host check: that guards servers trusting ambient credentials
        # (cookies, loopback); every request here carries its own bearer token.
        self.manager = StreamableHTTPSessionManager(
            app=self.server, max_request_body_size=settings.max_request_bytes
        )
        self._running = False

    def routes(self) -> list[BaseRoute]:
        return [
            Route(MCP_PATH, self, methods=["GET", "POST", "DELETE"]),
            Route(METADATA_PATH, self.metadata, methods=["GET"]),
            Route(METADATA_PATH + MCP_PATH, self.metadata, methods=["GET"]),
        ]

    def _base_url(self, request: Request) -> str:
        public = self.services.settings.public_url
        return (public or str(request.base_url)).rstrip("/")

    async def metadata(self, request: Request) -> Response:
        """RFC 9728 protected-resource metadata."""
        base = self._base_url(request)
        return JSONResponse(
            {
                "resource": base + MCP_PATH,
                "authorization_servers": [self.services.settings.issuer],
                "bearer_methods_supported": ["header"],
                "resource_name": "Fortemi",
            },
            # Not cacheable by shared caches: without FORTEMI_PUBLIC_URL it names the host the
            # request was sent to.
            headers={"Cache-Control": "private, max-age=3600"},
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            self._running = True
            self.feed.start()
            try:
                yield
            finally:
                self._running = False
                await self.feed.stop()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        if not self._running:  # served without the app's lifespan
            unavailable = JSONResponse({"error": "MCP is not running on this server"}, 503)
            await unavailable(scope, receive, send)
            return
        try:
            principal = await self.services.tokens.validate(
                bearer_token(request.headers.get("authorization"))
            )
        except Unauthenticated as exc:
            log.info("rejected MCP request: %s", exc.reason)
            await self._challenge(request, exc)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        scope["user"] = AuthenticatedUser(_access_token(principal))
        leeway = self.services.settings.oidc_leeway_seconds
        remaining = principal.expires_at.timestamp() + leeway - time.time()
        # A streamed response (a subscription) ends with the token that opened it.
        with anyio.move_on_after(max(remaining, 0)):
            await self.manager.handle_request(scope, receive, send)

    def _challenge(self, request: Request, exc: Unauthenticated) -> Response:
        metadata = self._base_url(request) + METADATA_PATH + MCP_PATH
        given = bool(request.headers.get("authorization"))
        challenge = f'Bearer resource_metadata="{metadata}"'
        if given:
            challenge += ', error="invalid_token"'
        body = {"error": "invalid_token" if given else "unauthorized", "message": exc.message}
        return Response(
            json.dumps(body),
            401,
            media_type="application/json",
            headers={"WWW-Authenticate": challenge},
        )


def _access_token(principal: Principal) -> AccessToken:
    """The principal as the SDK identifies a session's owner (client, issuer, subject)."""
    return AccessToken(
        token="",  # never kept: the principal is what acts
        client_id=principal.client_id or principal.sub,
        scopes=[],
        expires_at=int(principal.expires_at.timestamp()),
        subject=principal.sub,
        claims={"iss": principal.issuer},
    )
