"""The auditors' queries over ``public.rbac_audit_log``: filtered pages and counts.

The three questions compliance asks, and how they are answered:

1. *Every access in the last seven days*: ``list_entries(db, AuditFilter(since=now - 7d))``.
2. *Who accessed what*: ``stats(db, AuditFilter(decision="allow"), bucket="day",
   group_by=["user", "resource"])``.
3. *Denied attempts, and why*: ``stats(db, AuditFilter(decision="deny"), bucket="hour",
   group_by=["user", "reason"])``.

Values always travel as ``$n`` parameters. Query text is spliced only from this module's
constants: the column list, fixed filter fragments, and group-by columns looked up in a
whitelist (never taken from input); those lines carry ``noqa: S608`` for that reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from fortemi.auth.audit.models import (
    AuditBucket,
    AuditEntry,
    AuditFilter,
    AuditPage,
    AuditRecord,
    Bucket,
    GroupBy,
)
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.pages import rows_to_fetch
from fortemi.platform.sql import SerialCursor

__all__ = [
    "COLUMNS",
    "DEFAULT_PAGE_SIZE",
    "MAX_BUCKETS",
    "MAX_PAGE_SIZE",
    "entry_from_row",
    "list_entries",
    "stats",
    "where_clause",
]

COLUMNS = (
    "id, at, user_id, groups, resource_type, resource_name, memory, action, decision, reason, "
    "policy_version, trace_id, client_request_id, client_addr, job_id, details, segment, seq, "
    "prev_hash, chain_hash"
)
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
# A stats answer is for a person or a chart; past this many rows the filter is too wide.
MAX_BUCKETS = 10_000

_BUCKETS: frozenset[str] = frozenset({"hour", "day"})
# The only column names a group-by can add to a query.
_GROUP_COLUMNS: dict[str, tuple[str, ...]] = {
    "user": ("user_id",),
    "resource": ("resource_type", "resource_name"),
    "decision": ("decision",),
    "reason": ("reason",),
}
# (AuditFilter field, SQL fragment with {} for the parameter number)
_FILTERS: tuple[tuple[str, str], ...] = (
    ("since", "at >= ${}"),
    ("until", "at < ${}"),
    ("user_id", "user_id = ${}"),
    ("group", "${} = ANY(groups)"),
    ("resource_type", "resource_type = ${}"),
    ("resource_name", "resource_name = ${}"),
    ("memory", "memory = ${}"),
    ("action", "action = ${}"),
    ("decision", "decision = ${}"),
    ("reason", "reason = ${}"),
)
_CURSOR = SerialCursor("a1")


def entry_from_row(row: asyncpg.Record) -> AuditEntry:
    """An :class:`AuditEntry` from a row selected with :data:`COLUMNS`."""
    record = AuditRecord(
        at=row["at"],
        user_id=row["user_id"],
        groups=tuple(row["groups"]),
        resource_type=row["resource_type"],
        resource_name=row["resource_name"],
        memory=row["memory"],
        action=row["action"],
        decision=row["decision"],
        reason=row["reason"],
        policy_version=row["policy_version"],
        trace_id=row["trace_id"],
        client_addr=row["client_addr"],
        job_id=row["job_id"],
        details=row["details"],
        client_request_id=row["client_request_id"],
    )
    return AuditEntry(
        row["id"], record, row["segment"], row["seq"], row["prev_hash"], row["chain_hash"]
    )


def where_clause(filter: AuditFilter, args: list[Any]) -> str:
    """``WHERE ...`` (or ``""``) for ``filter``; its values are appended to ``args``."""
    conditions = []
    for name, fragment in _FILTERS:
        value = getattr(filter, name)
        if value is None:
            continue
        if isinstance(value, datetime) and value.utcoffset() is None:
            raise BadUserInput(f"{name} must include a time zone", field=name)
        args.append(value)
        conditions.append(fragment.format(len(args)))
    return f"WHERE {' AND '.join(conditions)}" if conditions else ""


async def list_entries(
    db: Database,
    filter: AuditFilter | None = None,
    *,
    first: int | None = None,
    after: str | None = None,
) -> AuditPage:
    """A page of entries matching ``filter``, newest first (``id DESC``).

    ``first`` defaults to 50 and is capped at 500; 0 gives an empty page (with
    ``has_next_page`` telling whether anything matches). ``after`` is the cursor of the last
    item of the previous page; a malformed one is :class:`BadUserInput`.
    """
    if first is None:
        first = DEFAULT_PAGE_SIZE
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise BadUserInput("first must be zero or a positive integer", field="first")
    limit = min(first, MAX_PAGE_SIZE)
    args: list[Any] = []
    where = where_clause(filter or AuditFilter(), args)
    position = None if after is None else _CURSOR.decode(after)
    if position is not None:
        args.append(_CURSOR.through(position))
        where = f"{where} AND id < ${len(args)}" if where else f"WHERE id < ${len(args)}"
    args.append(rows_to_fetch(limit, position))
    query = (
        f"SELECT {COLUMNS} FROM public.rbac_audit_log {where} "  # noqa: S608 - constants only
        f"ORDER BY id DESC LIMIT ${len(args)}"
    )
    async with db.connection() as conn:
        rows = await conn.fetch(query, *args)
    return _CURSOR.page([entry_from_row(row) for row in rows], limit=limit, after=position)


async def stats(
    db: Database,
    filter: AuditFilter | None = None,
    *,
    bucket: Bucket = "day",
    group_by: Sequence[GroupBy] = (),
) -> list[AuditBucket]:
    """Row counts per ``bucket`` (UTC hours or days) and per value of the ``group_by`` keys.

    Buckets come ordered by start, then by count (largest first), then by the grouped
    values. ``"resource"`` groups by type and name together. More than :data:`MAX_BUCKETS`
    rows is :class:`BadUserInput`: narrow the filter or widen the bucket.
    """
    if bucket not in _BUCKETS:
        raise BadUserInput("bucket must be hour or day", field="bucket")
    columns: list[str] = []
    for key in group_by:
        if key not in _GROUP_COLUMNS:
            raise BadUserInput(
                f"group_by takes {', '.join(_GROUP_COLUMNS)}; {key!r} is not one of them",
                field="group_by",
            )
        columns += [c for c in _GROUP_COLUMNS[key] if c not in columns]
    args: list[Any] = [bucket]
    where = where_clause(filter or AuditFilter(), args)
    keys = "".join(f", {c}" for c in columns)
    positions = "".join(f", {i}" for i in range(2, len(columns) + 2))
    query = (
        f"SELECT date_trunc($1, at, 'UTC') AS start{keys}, count(*) AS count "  # noqa: S608
        f"FROM public.rbac_audit_log {where} "
        f"GROUP BY 1{positions} ORDER BY 1, count DESC{positions} LIMIT {MAX_BUCKETS + 1}"
    )
    async with db.connection() as conn:
        rows = await conn.fetch(query, *args)
    if len(rows) > MAX_BUCKETS:
        raise BadUserInput(
            f"The answer has more than {MAX_BUCKETS} buckets; narrow the filter (since, "
            "until, user, resource) or use a wider bucket",
            field="filter",
        )
    return [
        AuditBucket(start=row["start"], count=row["count"], **{c: row[c] for c in columns})
        for row in rows
    ]
