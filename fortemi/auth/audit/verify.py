"""Re-check the audit log's chains and say where the first break is.

Everything is read inside one REPEATABLE READ READ ONLY transaction: the writer commits
rows and the segment head in one statement, so a consistent snapshot sees them agree
while writers keep appending. First the segment registry (:mod:`.registry`): its
ordinals must run 1, 2, ... without gaps and each registration must link to the one
before it under its key, so a segment deleted whole, head included, is found. Then each
segment is walked in ``seq`` order with a server-side cursor (never the whole table in
memory), checking for every row that

* its ``seq`` follows the previous row's (a gap or a repeat: rows deleted or reordered);
* its ``prev_hash`` is the previous row's ``chain_hash`` (the link; for seq 1 the
  segment's registration link, which ties the rows to the registry);
* its ``chain_hash`` is the keyed hash of its own content (:mod:`.chain`): an edit shows
  here, and it cannot be recomputed without the key;
* where a later registration (or an exported head) pinned this segment's head at some
  ``seq``, the row there has the pinned hash, so rows deleted from the end along with a
  rolled-back head are found up to the last pin;
* in an unkeyed segment (from before keyed chaining), that a keyed registration pins it
  at or beyond the row's ``seq``: unkeyed hashes prove nothing on their own;

and, at the end of the segment, that the head (``rbac_audit_segment``) records the last
row's seq and hash. A row that fails is *broken*; the walk goes on from the row's stored
values, so every break is found and the lowest id among them is reported. A deleted tail
is reported at the last row that remains; a break in the registry at the first row of the
segment whose registration shows it.

With ``since``, each segment starts at its first row with ``at >= since``, trusting that
row's ``prev_hash`` and ``seq`` as the anchor (older rows may have been purged; their
registrations must stay).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fortemi.auth.audit.chain import chain_hash, unkeyed_chain_hash, unkeyed_genesis_hash
from fortemi.auth.audit.keys import AuditKeyring
from fortemi.auth.audit.models import AuditEntry, AuditRecord, Pin, Verification
from fortemi.auth.audit.registry import Segment, check_registry, load_segments
from fortemi.auth.audit.repository import anchor, first_id, log_segments, walk_from
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput

__all__ = ["verify"]

Hasher = Callable[[str, str, int, AuditRecord], str]


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


@dataclass(slots=True)
class _Pins:
    """Heads seen from outside a segment: {segment: {seq: [(hash, who saw it)]}}."""

    by_segment: dict[str, dict[int, list[tuple[str, str]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    def add(self, pin: Pin, by: str) -> None:
        self.by_segment[pin.segment][pin.seq].append((pin.hash, by))

    def first_by(self, segment: str) -> str:
        """Who pinned ``segment`` at its lowest pinned seq."""
        seqs = self.by_segment[segment]
        return seqs[min(seqs)][0][1]


async def verify(
    db: Database,
    keyring: AuditKeyring,
    *,
    since: datetime | None = None,
    segment: str | None = None,
    heads: Sequence[Pin] = (),
    page_size: int = 1000,
) -> Verification:
    """Re-check the registry and every chain (or only ``segment``'s rows) under
    ``keyring``; see the module docstring.

    ``heads`` are segment heads exported earlier (``fortemi audit heads``): each must still
    be in its chain, which catches the newest rows (or segments) deleted after the export.
    ``page_size`` is how many rows the cursor fetches per round trip.
    """
    if since is not None and since.utcoffset() is None:
        raise BadUserInput("since must include a time zone", field="since")
    findings = _Findings()
    pins = _Pins()
    for pin in heads:
        pins.add(pin, "the exported heads")
    async with db.connection() as conn:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            segments = await load_segments(conn)
            for problem in check_registry(segments, keyring):
                row_id = None
                if problem.segment is not None:
                    row_id = await first_id(conn, problem.segment)
                findings.broken(row_id, problem.text)
            # Unkeyed segments: the last seq a keyed registration vouches for.
            anchored: dict[str, int] = {}
            for seg in segments.values():
                if seg.keyed:
                    by = f"the registration of segment {seg.name!r}"
                    for pin in seg.pins:
                        pins.add(pin, by)
                        anchored[pin.segment] = max(pin.seq, anchored.get(pin.segment, 0))
            if segment is None:
                logged = await log_segments(conn)
                names: Sequence[str] = sorted(set(segments) | logged)
                for gone in sorted(set(pins.by_segment) - set(names)):
                    by = pins.first_by(gone)
                    findings.broken(None, f"{by} pins segment {gone!r}, which is gone: deleted")
            else:
                names = [segment]
            for name in names:
                await _walk(
                    conn,
                    name,
                    segments.get(name),
                    anchored.get(name),
                    keyring,
                    pins.by_segment.get(name, {}),
                    since,
                    page_size,
                    findings,
                )
    return findings.result()


def _hasher(segment: Segment, keyring: AuditKeyring) -> tuple[Hasher, str] | None:
    """How ``segment``'s rows hash, and its first row's ``prev_hash``; None if unknown."""
    if not segment.keyed:
        return unkeyed_chain_hash, unkeyed_genesis_hash(segment.name)
    key = keyring.get(segment.key_id or "")
    if key is None:
        return None  # reported by the registry check

    def keyed(prev: str, name: str, seq: int, record: AuditRecord) -> str:
        return chain_hash(key, prev, name, seq, record)

    return keyed, segment.link or ""


async def _walk(
    conn: Connection,
    name: str,
    segment: Segment | None,
    anchored: int | None,
    keyring: AuditKeyring,
    pins: dict[int, list[tuple[str, str]]],
    since: datetime | None,
    page_size: int,
    findings: _Findings,
) -> None:
    """Check one segment's rows from its anchor, then its pins and head."""
    if segment is None:
        # Without its registration neither the key nor the genesis of these rows is known.
        first = await first_id(conn, name)
        findings.broken(first, f"segment {name!r} has rows but no registration: it was deleted")
        return
    how = _hasher(segment, keyring)
    if how is None:
        return
    hasher, genesis = how
    start, expected_prev = 1, genesis
    if since is not None:
        # No row since then: the last row, still checked against the head (a deleted tail).
        found = await anchor(conn, name, since)
        if found is not None:
            start, expected_prev = found
    if start == 1:
        for pinned_hash, by in pins.get(0, []):
            if pinned_hash != genesis:
                findings.broken(None, f"segment {name!r} does not start where {by} saw it start")
    expected_seq = start
    last: tuple[int, int, str] | None = None  # (id, seq, chain_hash) of the last row seen
    async for entry in walk_from(conn, name, start, prefetch=page_size):
        findings.checked += 1
        where = f"segment {name!r} seq {entry.seq} (id {entry.id})"
        if not segment.keyed:
            _check_unkeyed(name, where, entry, anchored, first=last is None, findings=findings)
        if entry.seq != expected_seq:
            findings.broken(
                entry.id, f"{where} follows seq {expected_seq - 1}: rows deleted or reordered"
            )
        elif entry.prev_hash != expected_prev:
            findings.broken(entry.id, f"{where} does not link to the row before it")
        elif hasher(entry.prev_hash, name, entry.seq, entry.record) != entry.chain_hash:
            findings.broken(entry.id, f"{where} does not match its hash: it was altered")
        elif entry.seq > segment.last_seq:
            findings.broken(
                entry.id, f"{where} lies beyond the segment's head (seq {segment.last_seq})"
            )
        for pinned_hash, by in pins.get(entry.seq, []):
            if pinned_hash != entry.chain_hash:
                findings.broken(entry.id, f"{where} is not the row {by} saw there: rewritten")
        expected_seq, expected_prev = entry.seq + 1, entry.chain_hash
        last = (entry.id, entry.seq, entry.chain_hash)
    _check_pins(name, pins, start, last, findings)
    _check_head(name, (segment.last_seq, segment.last_hash), last, findings)


def _check_unkeyed(
    name: str,
    where: str,
    entry: AuditEntry,
    anchored: int | None,
    *,
    first: bool,
    findings: _Findings,
) -> None:
    """An unkeyed segment's row stands only up to where a keyed registration anchored it."""
    if anchored is None and first:
        findings.broken(
            entry.id,
            f"segment {name!r} is unkeyed and no keyed registration anchors it: "
            "it was forged or rewritten without the key",
        )
    elif anchored is not None and entry.seq > anchored:
        findings.broken(
            entry.id,
            f"{where} is unkeyed and lies beyond seq {anchored}, where the keyed "
            "registry anchored its segment: added without the key",
        )


def _check_pins(
    name: str,
    pins: dict[int, list[tuple[str, str]]],
    start: int,
    last: tuple[int, int, str] | None,
    findings: _Findings,
) -> None:
    last_seq = 0 if last is None else last[1]
    for seq in sorted(pins):
        if seq > last_seq and seq >= start:
            _, by = pins[seq][0]
            findings.broken(
                None if last is None else last[0],
                f"segment {name!r} ends at seq {last_seq} but {by} saw seq {seq}: "
                "rows after it were deleted",
            )
            return


def _check_head(
    name: str, head: tuple[int, str], last: tuple[int, int, str] | None, findings: _Findings
) -> None:
    head_seq, head_hash = head
    if last is None:
        if head_seq > 0:
            findings.broken(
                None, f"segment {name!r}: its head records seq {head_seq}, no rows remain"
            )
        return
    last_id, last_seq, last_hash = last
    if last_seq < head_seq:
        findings.broken(
            last_id,
            f"segment {name!r} ends at seq {last_seq} (id {last_id}) but its head records "
            f"seq {head_seq}: rows after it were deleted",
        )
    elif last_seq == head_seq and last_hash != head_hash:
        findings.broken(
            last_id, f"segment {name!r}: the last row (id {last_id}) does not match its head"
        )
