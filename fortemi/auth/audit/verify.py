"""Re-check the audit log's hash chains and say where the first break is.

Each segment is walked in ``seq`` order with a server-side cursor (never the whole table
in memory), inside one REPEATABLE READ READ ONLY transaction: the writer commits rows and
the segment head in one statement, so a consistent snapshot sees them agree while
writers keep appending. For every row the walk checks that

* its ``seq`` follows the previous row's (a gap or a repeat: rows deleted or reordered);
* its ``prev_hash`` is the previous row's ``chain_hash`` (the link; genesis for seq 1);
* its ``chain_hash`` is the hash of its own content (:mod:`.chain`): an edit shows here;

and, at the end of the segment, that the head (``rbac_audit_segment``) records the last
row's seq and hash, so rows deleted from the tail are detected too. A row that fails is
*broken*; the walk goes on from the row's stored values, so every break is found and the
lowest id among them is reported. A deleted tail is reported at the last row that remains
(the chain is intact up to it, but what followed it is gone).

With ``since``, each segment starts at its first row with ``at >= since``, trusting that
row's ``prev_hash`` and ``seq`` as the anchor (older rows may have been purged).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from fortemi.auth.audit.chain import chain_hash, genesis_hash
from fortemi.auth.audit.models import Verification
from fortemi.auth.audit.repository import COLUMNS, entry_from_row
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput

__all__ = ["verify"]

_HEADS = "SELECT segment, last_seq, last_hash FROM public.rbac_audit_segment"
_HEAD = _HEADS + " WHERE segment = $1"

# The distinct segments of the log by a skip scan over the (segment, seq) index: one index
# probe per segment instead of reading every row.
_LOG_SEGMENTS = """
WITH RECURSIVE s(segment) AS (
    (SELECT segment FROM public.rbac_audit_log ORDER BY segment LIMIT 1)
    UNION ALL
    SELECT (SELECT l.segment FROM public.rbac_audit_log AS l
            WHERE l.segment > s.segment ORDER BY l.segment LIMIT 1)
    FROM s WHERE s.segment IS NOT NULL
)
SELECT segment FROM s WHERE segment IS NOT NULL
"""

_FIRST_SINCE = """
SELECT seq, prev_hash FROM public.rbac_audit_log
WHERE segment = $1 AND at >= $2 ORDER BY seq LIMIT 1
"""
_LAST = """
SELECT seq, prev_hash FROM public.rbac_audit_log
WHERE segment = $1 ORDER BY seq DESC LIMIT 1
"""

_WALK = (
    f"SELECT {COLUMNS} FROM public.rbac_audit_log "  # noqa: S608 - constants only
    "WHERE segment = $1 AND seq >= $2 ORDER BY seq"
)


@dataclass(slots=True)
class _Findings:
    checked: int = 0
    first: tuple[int, str] | None = None  # (id, problem) of the lowest broken id
    unplaced: str | None = None  # the first problem with no row to point at

    def broken(self, row_id: int | None, problem: str) -> None:
        if row_id is None:
            self.unplaced = self.unplaced or problem
        elif self.first is None or row_id < self.first[0]:
            self.first = (row_id, problem)

    def result(self) -> Verification:
        if self.first is not None:
            return Verification(False, self.checked, self.first[0], self.first[1])
        if self.unplaced is not None:
            return Verification(False, self.checked, None, self.unplaced)
        return Verification(True, self.checked, None, None)


async def verify(
    db: Database,
    *,
    since: datetime | None = None,
    segment: str | None = None,
    page_size: int = 1000,
) -> Verification:
    """Re-check every chain (or only ``segment``'s); see the module docstring.

    ``page_size`` is how many rows the cursor fetches per round trip.
    """
    if since is not None and since.utcoffset() is None:
        raise BadUserInput("since must include a time zone", field="since")
    findings = _Findings()
    async with db.connection() as conn:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            if segment is None:
                heads = {r["segment"]: r for r in await conn.fetch(_HEADS)}
                names: Sequence[str] = sorted(
                    set(heads) | {r["segment"] for r in await conn.fetch(_LOG_SEGMENTS)}
                )
            else:
                heads = {r["segment"]: r for r in await conn.fetch(_HEAD, segment)}
                names = [segment]
            for name in names:
                head = heads.get(name)
                await _walk(
                    conn,
                    name,
                    None if head is None else (head["last_seq"], head["last_hash"]),
                    since,
                    page_size,
                    findings,
                )
    return findings.result()


async def _walk(
    conn: Connection,
    segment: str,
    head: tuple[int, str] | None,
    since: datetime | None,
    page_size: int,
    findings: _Findings,
) -> None:
    """Check one segment's rows from its anchor, then its head."""
    start, expected_prev = 1, genesis_hash(segment)
    if since is not None:
        anchor = await conn.fetchrow(_FIRST_SINCE, segment, since)
        # No row since then: still check the last row against the head (a deleted tail).
        anchor = anchor or await conn.fetchrow(_LAST, segment)
        if anchor is not None:
            start, expected_prev = anchor["seq"], anchor["prev_hash"]
    expected_seq = start
    last: tuple[int, int, str] | None = None  # (id, seq, chain_hash) of the last row seen
    async for row in conn.cursor(_WALK, segment, start, prefetch=page_size):
        entry = entry_from_row(row)
        findings.checked += 1
        where = f"segment {segment!r} seq {entry.seq} (id {entry.id})"
        if entry.seq != expected_seq:
            findings.broken(
                entry.id, f"{where} follows seq {expected_seq - 1}: rows deleted or reordered"
            )
        elif entry.prev_hash != expected_prev:
            findings.broken(entry.id, f"{where} does not link to the row before it")
        elif chain_hash(entry.prev_hash, segment, entry.seq, entry.record) != entry.chain_hash:
            findings.broken(entry.id, f"{where} does not match its hash: it was altered")
        elif head is not None and entry.seq > head[0]:
            findings.broken(entry.id, f"{where} lies beyond the segment's head (seq {head[0]})")
        expected_seq, expected_prev = entry.seq + 1, entry.chain_hash
        last = (entry.id, entry.seq, entry.chain_hash)
    _check_head(segment, head, last, findings)


def _check_head(
    segment: str,
    head: tuple[int, str] | None,
    last: tuple[int, int, str] | None,
    findings: _Findings,
) -> None:
    if head is None:
        if last is not None:
            findings.broken(last[0], f"segment {segment!r} has rows but no head record")
        return
    head_seq, head_hash = head
    if last is None:
        if head_seq > 0:
            findings.broken(
                None, f"segment {segment!r}: its head records seq {head_seq}, no rows remain"
            )
        return
    last_id, last_seq, last_hash = last
    if last_seq < head_seq:
        findings.broken(
            last_id,
            f"segment {segment!r} ends at seq {last_seq} (id {last_id}) but its head records "
            f"seq {head_seq}: rows after it were deleted",
        )
    elif last_seq == head_seq and last_hash != head_hash:
        findings.broken(
            last_id, f"segment {segment!r}: the last row (id {last_id}) does not match its head"
        )
