"""Exported heads: the state of every chain at one moment, to keep apart from the database.

Someone who can write the database but lacks the key cannot forge rows, but can still
delete the newest rows of a segment together with a rolled-back head, or the newest
segments whole: nothing later in the database vouches for them yet. A heads file saved
elsewhere does: ``verify(..., heads=read_heads(file))`` checks that every exported head is
still in its chain. Export them as often as such a loss would matter (a cron job).

One JSON object per line and segment: ``segment``, ``last_seq``, ``last_hash`` (the head),
and for keyed segments their registration (``ordinal``, ``key_id``, ``started_at``,
``pins``, ``prev_link``, ``link``), so an auditor can re-check the registry offline too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TextIO

from fortemi.auth.audit.chain import format_time
from fortemi.auth.audit.models import Pin
from fortemi.auth.audit.registry import load_segments
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput

__all__ = ["export_heads", "read_heads"]


async def export_heads(db: Database, out: TextIO) -> int:
    """Write every segment's head (and registration) to ``out``; returns how many."""
    async with db.connection() as conn:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            segments = await load_segments(conn)
    ordered = sorted(segments.values(), key=lambda s: (s.ordinal is not None, s.ordinal, s.name))
    for seg in ordered:
        row: dict[str, Any] = {
            "segment": seg.name,
            "last_seq": seg.last_seq,
            "last_hash": seg.last_hash,
            "ordinal": seg.ordinal,
            "key_id": seg.key_id,
            "started_at": format_time(seg.started_at),
            "pins": [[p.segment, p.seq, p.hash] for p in seg.pins] if seg.keyed else None,
            "prev_link": seg.prev_link,
            "link": seg.link,
        }
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
    return len(ordered)


def read_heads(lines: Iterable[str]) -> list[Pin]:
    """The heads of an exported file, as pins; BadUserInput naming the first bad line."""
    pins = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            segment, seq, hash_ = row["segment"], row["last_seq"], row["last_hash"]
        except (ValueError, TypeError, KeyError) as exc:
            raise BadUserInput(
                f"line {number} of the heads file is not an exported head", field="heads"
            ) from exc
        valid = isinstance(segment, str) and isinstance(hash_, str)
        if not valid or isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise BadUserInput(
                f"line {number} of the heads file is not an exported head", field="heads"
            )
        pins.append(Pin(segment, seq, hash_))
    return pins
