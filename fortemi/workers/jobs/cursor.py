"""Opaque page cursors for keyset pagination over jobs.

A cursor is the position of a job in the list order (``created_at DESC, id DESC``):
base64url, unpadded, of the JSON ``["j1", created_at ISO-8601, id]``. The ``"j1"`` tag keeps
a note cursor (``"n1"``) from being read as a job position, and lets the format change
later. A cursor only names a position, so a forged one can at most start a page elsewhere;
anything that does not decode to a position is the caller's error, never a server error.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from uuid import UUID

from fortemi.platform.errors import BadUserInput

__all__ = ["decode_cursor", "encode_cursor"]

_TAG = "j1"
# A real cursor is about 110 characters; anything far longer is not one of ours.
_MAX_CURSOR_CHARS = 256


def encode_cursor(created_at: datetime, job_id: UUID) -> str:
    payload = json.dumps([_TAG, created_at.isoformat(), str(job_id)], separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode("ascii")).rstrip(b"=").decode("ascii")


def _invalid() -> BadUserInput:
    return BadUserInput(
        "after is not a valid cursor; pass the cursor of an item from a previous page",
        field="after",
    )


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    """The (created_at, id) position ``cursor`` names; BadUserInput if it names none."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
        raise _invalid()
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        tag, created_at, job_id = json.loads(raw.decode("ascii"))
        if tag != _TAG or not isinstance(created_at, str) or not isinstance(job_id, str):
            raise _invalid()
        position = datetime.fromisoformat(created_at), UUID(job_id)
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as exc:
        # json.JSONDecodeError is a ValueError; unpacking a wrong shape is Value/TypeError.
        raise _invalid() from exc
    if position[0].tzinfo is None:
        raise _invalid()
    return position
