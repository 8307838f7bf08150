"""Log configuration: text for a terminal, JSON lines for a log pipeline.

Every record carries the request id of the request it was logged for (``-`` outside a
request): the GraphQL view sets :data:`request_id` when it builds a request's context, and
the value follows the request's task and the tasks it starts. The same id is the one a
masked error shows the caller and the audit log stores as the trace id, so one id finds a
request in logs, answers and the audit log.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

__all__ = ["configure_logging", "request_id"]

request_id: ContextVar[str] = ContextVar("fortemi_request_id", default="-")

_TEXT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
_JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s"


class _RequestId(logging.Filter):
    """Stamps each record with the current request id (a filter on the handler, so
    records of every logger, uvicorn's and libraries' included, get it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


def configure_logging(
    level: str, fmt: Literal["text", "json"] = "text", *, stream: TextIO | None = None
) -> None:
    """Send every log record to ``stream`` (stderr), as text or one JSON object per line."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(_RequestId())
    if fmt == "json":
        handler.setFormatter(
            JsonFormatter(
                _JSON_FIELDS,
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                timestamp=False,
            )
        )
    else:
        handler.setFormatter(logging.Formatter(_TEXT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # pgserver logs every initdb/pg_ctl command line and its output at INFO.
    logging.getLogger("pgserver").setLevel(
        max(logging.WARNING, logging.getLevelName(level.upper()))
    )
