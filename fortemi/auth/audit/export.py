"""Export the audit log as JSON Lines or CSV, streaming, for auditors' own tools.

Rows go out in id order from a server-side cursor inside one REPEATABLE READ READ ONLY
transaction, so an export is one consistent snapshot however long it runs and however
large the log, while writers keep appending.

* ``jsonl``: one JSON object per line with every column, chain fields included, so an
  auditor can re-verify the chains offline (:mod:`.chain` documents the hash). Lossless.
* ``csv``: a header row, then one row per entry; ``groups`` joined with ``;``, ``details``
  as compact JSON text, absent values as empty cells. For spreadsheets: it cannot tell an
  absent value from an empty string, nor split a group name that contains ``;``; use
  JSON Lines to re-verify. Values are written as stored (no spreadsheet-formula escaping),
  since an audit export must be faithful; open it as data, not as a workbook to trust.

``at`` is ISO 8601 in UTC with microseconds in both formats, the form that is hashed.
``out`` is written synchronously; for CSV open it with ``newline=""`` (rows end in CRLF).
"""

from __future__ import annotations

import csv
import json
from datetime import datetime
from typing import Any, Literal, TextIO

from fortemi.auth.audit.chain import format_at
from fortemi.auth.audit.models import AuditEntry, AuditFilter
from fortemi.auth.audit.repository import entries_in_order
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput

__all__ = ["FIELDS", "Format", "export", "to_row"]

Format = Literal["jsonl", "csv"]
# The export format's columns, in the order readers of earlier exports rely on.
FIELDS = (
    "id", "at", "user_id", "groups", "resource_type", "resource_name", "memory", "action",
    "decision", "reason", "policy_version", "trace_id", "client_request_id", "client_addr",
    "job_id", "details", "segment", "seq", "prev_hash", "chain_hash",
)  # fmt: skip
_PREFETCH = 1000


def to_row(entry: AuditEntry) -> dict[str, Any]:
    """One entry as an exported object: :data:`FIELDS` in order, ``at`` as ISO text."""
    r = entry.record
    return {
        "id": entry.id,
        "at": format_at(r),
        "user_id": r.user_id,
        "groups": list(r.groups),
        "resource_type": r.resource_type,
        "resource_name": r.resource_name,
        "memory": r.memory,
        "action": r.action,
        "decision": r.decision,
        "reason": r.reason,
        "policy_version": r.policy_version,
        "trace_id": r.trace_id,
        "client_request_id": r.client_request_id,
        "client_addr": r.client_addr,
        "job_id": r.job_id,
        "details": r.details,
        "segment": entry.segment,
        "seq": entry.seq,
        "prev_hash": entry.prev_hash,
        "chain_hash": entry.chain_hash,
    }


def _csv_cells(row: dict[str, Any]) -> list[Any]:
    cells = dict(row)
    cells["groups"] = ";".join(row["groups"])
    cells["details"] = json.dumps(
        row["details"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return ["" if cells[name] is None else cells[name] for name in FIELDS]


async def export(
    db: Database,
    out: TextIO,
    *,
    fmt: Format,
    since: datetime | None = None,
    until: datetime | None = None,
) -> int:
    """Write the rows with ``since <= at < until`` (either bound optional) to ``out`` in id
    order; returns how many rows were written."""
    if fmt not in ("jsonl", "csv"):
        raise BadUserInput("format must be jsonl or csv", field="format")
    scan = entries_in_order(AuditFilter(since=since, until=until), prefetch=_PREFETCH)
    writer = csv.writer(out) if fmt == "csv" else None
    if writer is not None:
        writer.writerow(FIELDS)
    written = 0
    async with db.connection() as conn:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            async for entry in scan(conn):
                row = to_row(entry)
                if writer is None:
                    out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
                    out.write("\n")
                else:
                    writer.writerow(_csv_cells(row))
                written += 1
    return written
