"""The auditors' queries over ``public.rbac_audit_log``: filtered pages and counts.

The three questions compliance asks, and how they are answered:

1. *Every access in the last seven days*: ``list_entries(db, AuditFilter(since=now - 7d))``.
2. *Who accessed what*: ``stats(db, AuditFilter(decision="allow"), bucket="day",
   group_by=["user", "resource"])``.
3. *Denied attempts, and why*: ``stats(db, AuditFilter(decision="deny"), bucket="hour",
   group_by=["user", "reason"])``.

It also holds the log's other statements: the writer's batch insert and the verifier's
reads (the segment registry's are in :mod:`.registry`). A row's columns are ``id``, the
fields of :class:`AuditRecord` (declared once, there) and the chain columns.

Values always travel as parameters. Query text is spliced only from this module's
constants: the column list, fixed filter fragments, and group-by columns looked up in a
whitelist (never taken from input); the three filtered queries carry ``noqa: S608`` for
that reason.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
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
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.pages import rows_to_fetch
from fortemi.platform.sql import Query, SerialCursor, Table

__all__ = [
    "AUDIT_RECORD",
    "COLUMNS",
    "DEFAULT_PAGE_SIZE",
    "MAX_BUCKETS",
    "MAX_PAGE_SIZE",
    "anchor",
    "entries_in_order",
    "entry_from_row",
    "first_id",
    "head",
    "insert_batch",
    "list_entries",
    "log_segments",
    "stats",
    "walk_from",
    "where_clause",
]

AUDIT_RECORD = Table("public.rbac_audit_log", AuditRecord)
# The columns that place a record in its segment's hash chain.
_CHAIN_COLUMNS = ("segment", "seq", "prev_hash", "chain_hash")
COLUMNS = ", ".join(("id", *AUDIT_RECORD.columns, *_CHAIN_COLUMNS))
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
    return AuditEntry(
        row["id"],
        AUDIT_RECORD.from_record(row),
        row["segment"],
        row["seq"],
        row["prev_hash"],
        row["chain_hash"],
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


# -- the writer's and the verifier's statements ----------------------------------------

_HEAD = Query("SELECT last_seq, last_hash FROM public.rbac_audit_segment WHERE segment = :segment")

# The head moves by compare-and-set (:head_seq/:head_hash: the head this batch was chained
# from) and the rows join ``head``, so when the head has moved nothing at all is written.
# Each other bind is one column's values for the batch; groups and details travel as JSON
# text: unnest cannot carry an array of arrays of varying length.
_INSERT = Query("""
WITH head AS (
    UPDATE public.rbac_audit_segment
    SET last_seq = :last_seq, last_hash = :last_hash
    WHERE segment = :segment AND last_seq = :head_seq AND last_hash = :head_hash
    RETURNING segment
)
INSERT INTO public.rbac_audit_log
    (at, user_id, groups, resource_type, resource_name, memory, action, decision, reason,
     policy_version, trace_id, client_addr, job_id, details, client_request_id, segment,
     seq, prev_hash, chain_hash)
SELECT r.at, r.user_id, ARRAY(SELECT jsonb_array_elements_text(r.groups::jsonb)),
       r.resource_type, r.resource_name, r.memory, r.action, r.decision, r.reason,
       r.policy_version, r.trace_id, r.client_addr, r.job_id, r.details::jsonb,
       r.client_request_id, head.segment, :head_seq + r.n, r.prev_hash, r.chain_hash
FROM head,
     unnest(:at::timestamptz[], :user_id::text[], :groups::text[], :resource_type::text[],
            :resource_name::text[], :memory::text[], :action::text[], :decision::text[],
            :reason::text[], :policy_version::text[], :trace_id::text[],
            :client_addr::text[], :job_id::text[], :details::text[],
            :client_request_id::text[], :prev_hash::text[], :chain_hash::text[])
         WITH ORDINALITY
         AS r(at, user_id, groups, resource_type, resource_name, memory, action, decision,
              reason, policy_version, trace_id, client_addr, job_id, details,
              client_request_id, prev_hash, chain_hash, n)
ORDER BY r.n
RETURNING id, seq
""")

# The distinct segments of the log by a skip scan over the (segment, seq) index: one index
# probe per segment instead of reading every row.
_LOG_SEGMENTS = Query("""
WITH RECURSIVE s(segment) AS (
    (SELECT segment FROM public.rbac_audit_log ORDER BY segment LIMIT 1)
    UNION ALL
    SELECT (SELECT l.segment FROM public.rbac_audit_log AS l
            WHERE l.segment > s.segment ORDER BY l.segment LIMIT 1)
    FROM s WHERE s.segment IS NOT NULL
)
SELECT segment FROM s WHERE segment IS NOT NULL
""")

_FIRST = Query("SELECT id FROM public.rbac_audit_log WHERE segment = :segment ORDER BY seq LIMIT 1")
_FIRST_SINCE = Query("""
SELECT seq, prev_hash FROM public.rbac_audit_log
WHERE segment = :segment AND at >= :since ORDER BY seq LIMIT 1
""")
_LAST = Query("""
SELECT seq, prev_hash FROM public.rbac_audit_log
WHERE segment = :segment ORDER BY seq DESC LIMIT 1
""")

_WALK = AUDIT_RECORD.query(
    "SELECT {entry} FROM public.rbac_audit_log "
    "WHERE segment = :segment AND seq >= :start ORDER BY seq",
    entry=COLUMNS,
)


async def head(conn: Connection, segment: str) -> tuple[int, str] | None:
    """``segment``'s head (last seq, last hash); None if it is not registered."""
    row = await conn.fetchrow(_HEAD.sql, *_HEAD.args(segment=segment))
    return None if row is None else (row["last_seq"], row["last_hash"])


async def insert_batch(
    conn: Connection,
    segment: str,
    head: tuple[int, str],
    records: Sequence[AuditRecord],
    links: Sequence[tuple[str, str]],
) -> dict[int, int]:
    """Append ``records`` (chained by ``links``: (prev_hash, chain_hash) each) after
    ``head`` and move the head to the last; the new ids by seq, none if the head moved."""
    columns: dict[str, Any] = {
        name: [getattr(record, name) for record in records] for name in AUDIT_RECORD.columns
    }
    columns["groups"] = [json.dumps(list(r.groups), ensure_ascii=False) for r in records]
    columns["details"] = [json.dumps(r.details, ensure_ascii=False) for r in records]
    args = _INSERT.args(
        columns,
        segment=segment,
        last_seq=head[0] + len(records),
        last_hash=links[-1][1] if links else head[1],
        head_seq=head[0],
        head_hash=head[1],
        prev_hash=[prev for prev, _ in links],
        chain_hash=[current for _, current in links],
    )
    return {row["seq"]: row["id"] for row in await conn.fetch(_INSERT.sql, *args)}


async def log_segments(conn: Connection) -> set[str]:
    """The segments that have rows in the log."""
    return {row["segment"] for row in await conn.fetch(_LOG_SEGMENTS.sql)}


async def first_id(conn: Connection, segment: str) -> int | None:
    """The id of ``segment``'s first row, if it has any."""
    found: int | None = await conn.fetchval(_FIRST.sql, *_FIRST.args(segment=segment))
    return found


async def anchor(conn: Connection, segment: str, since: datetime) -> tuple[int, str] | None:
    """(seq, prev_hash) of ``segment``'s first row at or after ``since``, else of its last
    row (so a deleted tail is still checked against the head); None if it has no rows."""
    row = await conn.fetchrow(_FIRST_SINCE.sql, *_FIRST_SINCE.args(segment=segment, since=since))
    row = row or await conn.fetchrow(_LAST.sql, *_LAST.args(segment=segment))
    return None if row is None else (row["seq"], row["prev_hash"])


async def walk_from(
    conn: Connection, segment: str, start: int, *, prefetch: int
) -> AsyncIterator[AuditEntry]:
    """``segment``'s entries from seq ``start`` on, in seq order, through a cursor (the
    caller holds a transaction)."""
    args = _WALK.args(segment=segment, start=start)
    async for row in conn.cursor(_WALK.sql, *args, prefetch=prefetch):
        yield entry_from_row(row)


def entries_in_order(
    filter: AuditFilter, *, prefetch: int
) -> Callable[[Connection], AsyncIterator[AuditEntry]]:
    """A scan of the entries ``filter`` selects, in id order, through a cursor on the
    connection it is given (in a transaction the caller holds). ``filter`` is checked here,
    before anything is read or written (BadUserInput)."""
    args: list[Any] = []
    where = where_clause(filter, args)
    query = f"SELECT {COLUMNS} FROM public.rbac_audit_log {where} ORDER BY id"  # noqa: S608

    async def scan(conn: Connection) -> AsyncIterator[AuditEntry]:
        async for row in conn.cursor(query, *args, prefetch=prefetch):
            yield entry_from_row(row)

    return scan
