"""Rendering errors: stable ``extensions.code`` for expected ones, masking for the rest.

Expected errors are :class:`~fortemi.platform.errors.FortemiError` (their code and message
go to the caller) and GraphQL's own request errors, told apart by where they came from:
the parser raises :class:`~graphql.GraphQLSyntaxError` (``GRAPHQL_PARSE_FAILED``); the
executor hands variable coercion errors over as :class:`VariableValuesError`
(``BAD_USER_INPUT``, see ``fortemi.graphql.schema``); the rest are the validation rules'
(``GRAPHQL_VALIDATION_FAILED``). Anything else is a bug: the caller gets "Internal server
error" with the request id, and the log gets the traceback under the same id, so an
operator can grep for it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError

from fortemi.platform.errors import FortemiError, Unauthenticated

__all__ = ["VariableValuesError", "render_error", "render_errors"]

log = logging.getLogger("fortemi.graphql")

# graphql-core ends a message with its suggestions (pyutils.did_you_mean), in validation
# and in variable coercion alike.
_SUGGESTION = re.compile(r" Did you mean .*\?$", re.DOTALL)


class VariableValuesError(GraphQLError):
    """A variable value the operation cannot run with, found by graphql-core's coercion."""

    @classmethod
    def of(cls, error: GraphQLError) -> VariableValuesError:
        return cls(
            error.message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            original_error=error.original_error,
            extensions=error.extensions,
        )


def _request_error_code(error: GraphQLError) -> str:
    if isinstance(error, GraphQLSyntaxError):
        return "GRAPHQL_PARSE_FAILED"
    if isinstance(error, VariableValuesError):
        return "BAD_USER_INPUT"
    return "GRAPHQL_VALIDATION_FAILED"


def render_error(
    error: GraphQLError, request_id: str, *, hide_suggestions: bool = False
) -> GraphQLError:
    original = error.original_error
    if isinstance(original, FortemiError):
        if isinstance(original, Unauthenticated):
            log.info("unauthenticated [%s]: %s", request_id, original.reason)
        extensions = {**original.extensions, "code": original.code}
        return _with(error, original.message, extensions)
    if original is None or isinstance(original, GraphQLError):
        code = _request_error_code(error)
        message = _SUGGESTION.sub("", error.message) if hide_suggestions else error.message
        return _with(error, message, {**(error.extensions or {}), "code": code})
    log.error(
        "unexpected error [%s] at %s",
        request_id,
        error.path,
        exc_info=(type(original), original, original.__traceback__),
    )
    message = f"Internal server error (request id {request_id})"
    return _with(error, message, {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id})


def _with(error: GraphQLError, message: str, extensions: dict[str, object]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions=extensions,
    )


def render_errors(result: Any, context: Any, *, hide_suggestions: bool = False) -> Any:
    """Render ``result.errors`` in place (idempotent) and return ``result``."""
    errors = getattr(result, "errors", None)
    if errors:
        request_id = getattr(context, "request_id", "-")
        result.errors = [
            error
            if "code" in (error.extensions or {})
            else render_error(error, request_id, hide_suggestions=hide_suggestions)
            for error in errors
        ]
    return result
