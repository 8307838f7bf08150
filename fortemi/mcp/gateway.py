"""Runs a GraphQL operation as the MCP caller: the one way tools, resources and prompts
reach Fortemi.

The operation runs through the schema the GraphQL endpoint serves, with a
:class:`~fortemi.graphql.context.Context` for the caller's principal: the same resolvers
call the same services, ask the same :class:`~fortemi.auth.access.Authorizer`, write the
same audit records (with ``operation`` naming the MCP tool) and fail with the same
``extensions.code``. Nothing here decides access.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
import strawberry
from graphql import GraphQLError
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from fortemi.auth.principal import Principal
from fortemi.graphql.context import Context
from fortemi.graphql.services import Services
from fortemi.platform import logs

__all__ = [
    "MEMORY_HEADER",
    "Gateway",
    "Outcome",
    "bad_input",
    "not_found",
    "outcome_error",
    "principal_of",
]

MEMORY_HEADER = "x-fortemi-memory"


def principal_of(request: Request | None) -> Principal | None:
    """The principal the transport validated for this HTTP request, if any."""
    if request is None:
        return None
    principal = getattr(request.state, "principal", None)
    return principal if isinstance(principal, Principal) else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """An operation's data, or its errors as GraphQL renders them (message, code...)."""

    data: dict[str, Any] | None
    errors: list[dict[str, Any]]

    @property
    def failed(self) -> bool:
        return bool(self.errors)


def _error(message: str, code: str, **extensions: Any) -> dict[str, Any]:
    return {"message": message, "extensions": {"code": code, **extensions}}


def _formatted(error: GraphQLError) -> dict[str, Any]:
    shown: dict[str, Any] = {"message": error.message}
    if error.path:
        shown["path"] = list(error.path)
    shown["extensions"] = dict(error.extensions or {})
    shown["extensions"].setdefault("code", "INTERNAL_SERVER_ERROR")
    return shown


class Gateway:
    def __init__(self, schema: strawberry.Schema, services: Services) -> None:
        self.schema = schema
        self.services = services

    async def run(
        self,
        request: Request,
        operation: str,
        document: str,
        variables: Mapping[str, Any],
        *,
        memory: str | None = None,
        audit_name: str,
    ) -> Outcome:
        """``document``'s operation ``operation`` as the request's principal, in ``memory``
        (else the request's ``X-Fortemi-Memory``, else the default memory)."""
        principal = principal_of(request)
        if principal is None:  # only reachable if the endpoint is mounted without its guard
            return Outcome(None, [_error("Authentication required", "UNAUTHENTICATED")])
        request_id = uuid.uuid4().hex
        logs.request_id.set(request_id)
        context = Context(
            services=self.services,
            request=request,
            request_id=request_id,
            principal=principal,
            memory_name=memory or request.headers.get(MEMORY_HEADER),
            operation=audit_name,
        )
        result = await self.schema.execute(
            query=document,
            variable_values=dict(variables),
            context_value=context,
            operation_name=operation,
        )
        errors = [_formatted(error) for error in result.errors or ()]
        return Outcome(result.data, errors)

    def within_limit(self, outcome: Outcome) -> tuple[str, Outcome]:
        """The outcome as JSON text, or RESPONSE_TOO_LARGE in its place, as GraphQL answers
        a response over ``FORTEMI_MAX_RESPONSE_BYTES``."""
        body = {"data": outcome.data} if not outcome.failed else {"errors": outcome.errors}
        # orjson, as the GraphQL endpoint encodes responses: the stdlib encoder took a
        # millisecond of a search result's budget.
        encoded = orjson.dumps(body, default=str)
        limit = self.services.settings.max_response_bytes
        if len(encoded) <= limit:
            return encoded.decode("utf-8"), outcome
        refused = Outcome(
            None,
            [
                _error(
                    f"The result is over the {limit}-byte limit (FORTEMI_MAX_RESPONSE_BYTES): "
                    "ask for fewer items (limit, first) or a smaller token budget",
                    "RESPONSE_TOO_LARGE",
                    limit=limit,
                )
            ],
        )
        return json.dumps({"errors": refused.errors}), refused


def not_found(message: str) -> dict[str, Any]:
    return _error(message, "NOT_FOUND")


def outcome_error(outcome: Outcome) -> MCPError:
    """A failed operation behind a resource or prompt, as a JSON-RPC error whose ``data``
    carries the GraphQL code and errors."""
    first = outcome.errors[0]
    code = first["extensions"]["code"]
    rpc = types.INVALID_PARAMS if code in {"BAD_USER_INPUT", "NOT_FOUND"} else types.INTERNAL_ERROR
    return MCPError(rpc, f"{code}: {first['message']}", {"code": code, "errors": outcome.errors})


def bad_input(message: str) -> MCPError:
    """A request's argument that cannot be used, as a JSON-RPC error with code
    BAD_USER_INPUT."""
    return MCPError(types.INVALID_PARAMS, f"BAD_USER_INPUT: {message}", {"code": "BAD_USER_INPUT"})
