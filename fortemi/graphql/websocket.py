"""graphql-transport-ws where the token's lifetime bounds the socket's.

A WebSocket authenticates once, in ``connection_init``; the token it presented stays the
socket's credential for as long as the socket lives. So that a token's expiry means the
same on a socket as on HTTP:

* the socket closes with 4403 ("Token expired") at the token's ``exp`` plus the
  configured leeway (``OIDC_LEEWAY_SECONDS``), the last moment HTTP would still
  accept it; the operations still running are cancelled first;
* every operation (``subscribe`` message) is checked against that deadline before it
  starts, so one sent in the instant before the timer runs is refused the same way;
* after ``connection_ack``, a client renews by sending ``ping`` with payload
  ``{"authorization": "Bearer <fresh token>"}``: a valid token for the same subject (and
  issuer) becomes the socket's credential (its groups and roles apply to later
  decisions, its ``exp`` sets the new deadline) and the ``pong`` carries
  ``{"expiresAt": <ISO 8601>}``. An invalid token, or one for another subject, closes the
  socket with 4403: a socket never changes hands.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    PingMessage,
    SubscribeMessage,
)

from fortemi.auth.principal import Principal
from fortemi.auth.tokens import bearer_token
from fortemi.graphql.context import Context
from fortemi.platform.errors import Unauthenticated

__all__ = ["EXPIRED_CLOSE_CODE", "ExpiringTransportWSHandler", "authorization_of"]

log = logging.getLogger(__name__)

EXPIRED_CLOSE_CODE = 4403  # graphql-transport-ws: Forbidden


def authorization_of(payload: Mapping[str, object] | None) -> str | None:
    """The ``authorization`` entry of a ``connection_init`` or ``ping`` payload."""
    payload = payload or {}
    value = payload.get("authorization") or payload.get("Authorization")
    return value if isinstance(value, str) else None


class ExpiringTransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """Strawberry's graphql-transport-ws handler, closing the socket when its token expires
    and accepting a fresh token for the same subject in a ``ping``."""

    clock: Callable[[], float] = time.time

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = float("-inf")  # epoch seconds; meaningful once acknowledged
        self._expiry: asyncio.Task[None] | None = None

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        await super().handle_connection_init(message)
        if self.connection_acknowledged and self._expiry is None:
            self._arm(self.context.caller)

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        # Before the protocol's own checks: an expired socket answers nothing more.
        if self.connection_acknowledged and self.clock() >= self._deadline:
            await self._close_expired()
            return
        # One context serves every operation of the socket; each one decides its read
        # scopes afresh, as an HTTP request does, so a policy change reaches the next one.
        self.context.forget_read_scopes()
        await super().handle_subscribe(message)

    async def handle_ping(self, message: PingMessage) -> None:
        header = authorization_of(message.get("payload"))
        if header is None or not self.connection_acknowledged:
            await super().handle_ping(message)
            return
        principal = await self._renewed(header)
        if principal is None:
            return
        self.context.principal = principal
        self._arm(principal)
        expires_at = principal.expires_at.isoformat()
        await self.send_message({"type": "pong", "payload": {"expiresAt": expires_at}})

    async def shutdown(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        await super().shutdown()

    async def _renewed(self, header: str) -> Principal | None:
        """The principal of a renewal token, or None once the socket is closed for it."""
        current = self.context.caller
        try:
            principal = await self.context.services.tokens.validate(bearer_token(header))
        except Unauthenticated as exc:
            log.info("refused websocket renewal %s: %s", self.context.request_id, exc.reason)
            await self._close(EXPIRED_CLOSE_CODE, "Token renewal refused")
            return None
        if (principal.sub, principal.issuer) != (current.sub, current.issuer):
            log.info("refused websocket renewal %s: another subject", self.context.request_id)
            await self._close(EXPIRED_CLOSE_CODE, "Renewal token is for another subject")
            return None
        return principal

    def _arm(self, principal: Principal) -> None:
        """(Re)start the timer for ``principal``'s token: its exp plus the leeway."""
        leeway = self.context.services.settings.oidc_leeway_seconds
        self._deadline = principal.expires_at.timestamp() + leeway
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry = asyncio.create_task(self._close_at_deadline())
        self._expiry.add_done_callback(self._task_done)

    async def _close_at_deadline(self) -> None:
        try:
            await asyncio.sleep(max(0.0, self._deadline - self.clock()))
            await self._close_expired()
        except Exception as error:  # logged, as strawberry logs its own tasks' failures
            await self.handle_task_exception(error)

    async def _close_expired(self) -> None:
        expired = datetime.fromtimestamp(self._deadline, UTC).isoformat()
        log.info("closing websocket %s: token expired (%s)", self.context.request_id, expired)
        await self._close(EXPIRED_CLOSE_CODE, "Token expired")

    async def _close(self, code: int, reason: str) -> None:
        # Operations first: none may send another message as the old credential.
        for operation_id in list(self.operations):
            await self.cleanup_operation(operation_id)
        # RuntimeError: the socket was already closed (by the client, or a race with
        # the other closer); there is nothing left to tell it.
        with suppress(RuntimeError):
            await self.websocket.close(code=code, reason=reason)
