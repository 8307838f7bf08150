"""GraphQL operations in the process metrics (see :mod:`fortemi.platform.metrics`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from strawberry.extensions import SchemaExtension

from fortemi.platform.metrics import (
    GRAPHQL_ERRORS,
    GRAPHQL_OPERATION_SECONDS,
    GRAPHQL_OPERATIONS,
    operation_label,
)

__all__ = ["OperationMetrics", "count_errors"]


class OperationMetrics(SchemaExtension):
    """Counts each operation by name, type and outcome, and times it; an operation that
    never parsed counts under the type ``unknown``."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        failed = True
        try:
            yield
            result = self.execution_context.result
            failed = bool(self.execution_context.pre_execution_errors or (result and result.errors))
        finally:
            context = self.execution_context
            name = operation_label(context.operation_name)
            kind = _operation_type(context)
            GRAPHQL_OPERATIONS.labels(name, kind, "error" if failed else "ok").inc()
            GRAPHQL_OPERATION_SECONDS.labels(name, kind).observe(time.perf_counter() - started)


def _operation_type(context: Any) -> str:
    if context.graphql_document is None:
        return "unknown"
    try:
        return str(context.operation_type.value)
    except Exception:  # no such operation in the document, or several and none named
        return "unknown"


def count_errors(result: Any) -> None:
    """Count a rendered result's errors by ``extensions.code``."""
    for error in getattr(result, "errors", None) or ():
        code = (error.extensions or {}).get("code", "INTERNAL_SERVER_ERROR")
        GRAPHQL_ERRORS.labels(str(code)).inc()
