"""The segment registry, read back and re-checked: ``public.rbac_audit_segment``.

Keyed registrations are numbered by ``ordinal`` from 1 without gaps and each links to the
one before it (:mod:`.chain` has the format), so a registration deleted or renumbered is a
break at the next one, and its rows (which chain from their registration's link) cannot be
moved to another. Unkeyed rows (written before keyed chaining) carry no ordinal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from fortemi.auth.audit.chain import ROOT_LINK, registration_link
from fortemi.auth.audit.keys import AuditKeyring
from fortemi.auth.audit.models import Pin, Registration
from fortemi.platform.database import Connection

__all__ = ["Problem", "Segment", "check_registry", "load_segments", "pins_from_json"]

_SEGMENTS = """
SELECT segment, started_at, last_seq, last_hash, ordinal, key_id, pins, prev_link, link
FROM public.rbac_audit_segment
"""


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


def _segment(row: asyncpg.Record) -> Segment:
    try:
        pins = () if row["pins"] is None else pins_from_json(row["pins"])
    except ValueError:
        # Tampered pins: keep none, and let the link (which covers them) fail.
        pins = ()
    return Segment(
        name=row["segment"],
        started_at=row["started_at"],
        last_seq=row["last_seq"],
        last_hash=row["last_hash"],
        ordinal=row["ordinal"],
        key_id=row["key_id"],
        pins=pins,
        prev_link=row["prev_link"],
        link=row["link"],
    )


async def load_segments(conn: Connection) -> dict[str, Segment]:
    """Every registered segment by name (one row per writer process ever started)."""
    return {row["segment"]: _segment(row) for row in await conn.fetch(_SEGMENTS)}


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
