"""The segment registry, read back and re-checked: ``public.rbac_audit_segment``.

Keyed registrations are numbered by ``ordinal`` from 1 without gaps and each links to the
one before it (:mod:`.chain` has the format), so a registration deleted or renumbered is a
break at the next one, and its rows (which chain from their registration's link) cannot be
moved to another. Unkeyed rows (written before keyed chaining) carry no ordinal.

All SQL on the registry is here: the writer registers through it, the verifier reads it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import datetime

from fortemi.auth.audit.chain import ROOT_LINK, registration_link
from fortemi.auth.audit.keys import AuditKeyring
from fortemi.auth.audit.models import Pin, Registration
from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Row, Table

__all__ = [
    "SEGMENT",
    "Problem",
    "Segment",
    "check_registry",
    "last_registration",
    "load_segments",
    "lock_registry",
    "pins_from_json",
    "register",
    "registered_key",
    "unkeyed_heads",
]


@dataclass(frozen=True, slots=True)
class Segment:
    """One row of the registry: a segment's registration (if keyed) and its head."""

    name: str
    started_at: datetime
    last_seq: int
    last_hash: str
    ordinal: int | None
    key_id: str | None
    pins: tuple[Pin, ...]
    prev_link: str | None
    link: str | None

    @property
    def keyed(self) -> bool:
        return self.ordinal is not None

    def registration(self) -> Registration:
        return Registration(
            ordinal=self.ordinal or 0,
            segment=self.name,
            key_id=self.key_id or "",
            started_at=self.started_at,
            pins=self.pins,
            prev_link=self.prev_link or "",
            link=self.link or "",
        )


@dataclass(frozen=True, slots=True)
class Problem:
    """A break in the registry, shown at the first row of ``segment`` (if it has rows)."""

    segment: str | None
    text: str


def pins_from_json(value: object) -> tuple[Pin, ...]:
    """Pins as stored (a JSON array of ``[segment, seq, hash]``); ValueError if malformed."""
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, list):
        raise ValueError("pins must be a JSON array")
    pins = []
    for item in value:
        if (
            not isinstance(item, list)
            or len(item) != 3
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or not isinstance(item[1], int)
            or not isinstance(item[2], str)
        ):
            raise ValueError(f"a pin is [segment, seq, hash], not {item!r}")
        pins.append(Pin(item[0], item[1], item[2]))
    return tuple(pins)


def _stored_pins(value: object) -> tuple[Pin, ...]:
    try:
        return pins_from_json(value)
    except ValueError:
        # Tampered pins: keep none, and let the link (which covers them) fail.
        return ()


# A registration's columns are Segment's fields (the segment's name is its ``segment``).
SEGMENT = Table("public.rbac_audit_segment", Segment, convert={"pins": _stored_pins})

_SEGMENTS = SEGMENT.query(
    "SELECT {columns} FROM (SELECT *, segment AS name FROM public.rbac_audit_segment) AS s"
)

# Registrations are numbered and chained one after another, so they are serialised by a
# transaction-scoped lock; a process registers once, so the lock is never contended for long.
_REGISTRY_LOCK = Query("SELECT pg_advisory_xact_lock(hashtext('fortemi.audit.segment-registry'))")
_KEY_ID = Query("SELECT key_id FROM public.rbac_audit_segment WHERE segment = :segment")
_LAST_REGISTRATION = Query("""
SELECT ordinal, segment, last_seq, last_hash, link FROM public.rbac_audit_segment
WHERE ordinal IS NOT NULL ORDER BY ordinal DESC LIMIT 1
""")
_UNKEYED_HEADS = Query("""
SELECT segment, last_seq, last_hash FROM public.rbac_audit_segment WHERE ordinal IS NULL
""")
# A new segment's head is its genesis: seq 0, hashed to its own link.
_REGISTER = Query("""
INSERT INTO public.rbac_audit_segment
    (segment, host, pid, last_seq, last_hash, started_at, ordinal, key_id, pins, prev_link,
     link)
VALUES (:segment, :host, :pid, 0, :link, :started_at, :ordinal, :key_id, :pins::jsonb,
        :prev_link, :link)
""")


async def load_segments(conn: Connection) -> dict[str, Segment]:
    """Every registered segment by name (one row per writer process ever started)."""
    return {seg.name: seg for seg in map(_segment, await conn.fetch(_SEGMENTS.sql))}


def _segment(row: Row) -> Segment:
    segment = SEGMENT.from_record(row)
    # An unkeyed segment stores no pins (NULL): it pins nothing.
    return segment if segment.pins is not None else dataclasses.replace(segment, pins=())


async def lock_registry(conn: Connection) -> None:
    """Serialise registrations until the end of the caller's transaction."""
    await conn.execute(_REGISTRY_LOCK.sql)


async def registered_key(conn: Connection, segment: str) -> tuple[bool, str | None]:
    """Whether ``segment`` is registered, and the key id it is chained under."""
    row = await conn.fetchrow(_KEY_ID.sql, *_KEY_ID.args(segment=segment))
    return (False, None) if row is None else (True, row["key_id"])


async def last_registration(conn: Connection) -> tuple[int, str, Pin] | None:
    """(ordinal, link, head pin) of the newest keyed registration; None before the first."""
    row = await conn.fetchrow(_LAST_REGISTRATION.sql)
    if row is None:
        return None
    return row["ordinal"], row["link"], Pin(row["segment"], row["last_seq"], row["last_hash"])


async def unkeyed_heads(conn: Connection) -> list[Pin]:
    """The heads of the segments written before keyed chaining."""
    rows = await conn.fetch(_UNKEYED_HEADS.sql)
    return [Pin(r["segment"], r["last_seq"], r["last_hash"]) for r in rows]


async def register(conn: Connection, registration: Registration, *, host: str, pid: int) -> None:
    """Store ``registration`` (linked) as a new segment whose head is its genesis."""
    pins = json.dumps([[p.segment, p.seq, p.hash] for p in registration.pins])
    args = _REGISTER.args(
        segment=registration.segment,
        host=host,
        pid=pid,
        started_at=registration.started_at,
        ordinal=registration.ordinal,
        key_id=registration.key_id,
        pins=pins,
        prev_link=registration.prev_link,
        link=registration.link,
    )
    await conn.execute(_REGISTER.sql, *args)


def check_registry(segments: dict[str, Segment], keyring: AuditKeyring) -> list[Problem]:
    """The breaks in the chain of keyed registrations, in ordinal order."""
    problems: list[Problem] = []
    keyed = sorted((s for s in segments.values() if s.keyed), key=lambda s: s.ordinal or 0)
    expected, prev_link = 1, ROOT_LINK
    for seg in keyed:
        what = f"the registration of segment {seg.name!r} (ordinal {seg.ordinal})"
        key = keyring.get(seg.key_id or "")
        if seg.ordinal != expected:
            problems.append(
                Problem(
                    seg.name,
                    f"{what} follows ordinal {expected - 1}: the segments registered in "
                    "between were deleted, rows and head",
                )
            )
        elif seg.prev_link != prev_link:
            problems.append(Problem(seg.name, f"{what} does not link to the one before it"))
        elif key is None:
            problems.append(
                Problem(
                    seg.name,
                    f"{what} is chained under key {seg.key_id}, which the keyring does not "
                    "hold: add it to FORTEMI_AUDIT_RETIRED_KEYS",
                )
            )
        elif registration_link(key, seg.prev_link, seg.registration()) != seg.link:
            problems.append(Problem(seg.name, f"{what} does not match its link: it was altered"))
        expected, prev_link = (seg.ordinal or 0) + 1, seg.link or ""
    return problems
