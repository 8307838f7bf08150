"""Small SQL building blocks shared by the repositories.

* :class:`Where` builds a WHERE clause from fixed fragments, every value a ``$n``
  parameter: filters never splice caller input into SQL text.
* :class:`KeysetCursor` encodes a list position (``created_at DESC, id DESC``) as an opaque
  cursor: base64url, unpadded, of the JSON ``[tag, created_at ISO-8601, id]``. The tag keeps
  one list's cursor from being read as another's and lets the format change later. A
  cursor only names a position, so a forged one can at most start a page elsewhere;
  anything that does not decode to a position is the caller's error, never a server error.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from fortemi.platform.errors import BadUserInput

__all__ = ["KeysetCursor", "Where"]

# A real cursor is about 110 characters; anything far longer is not one of ours.
_MAX_CURSOR_CHARS = 256


class Where:
    """A WHERE clause from fixed fragments; every value becomes the next ``$n``."""

    def __init__(self, *leading: Any) -> None:
        """``leading``: values the rest of the statement binds first, as ``$1``.. ``$n``."""
        self.clauses: list[str] = []
        self.args: list[Any] = list(leading)

    def add(self, fragment: str, *values: Any) -> None:
        """``fragment`` names its values ``{0}``, ``{1}``...; they become placeholders."""
        first = len(self.args) + 1
        self.args.extend(values)
        self.clauses.append(fragment.format(*(f"${first + i}" for i in range(len(values)))))

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "true"


class KeysetCursor:
    def __init__(self, tag: str) -> None:
        self._tag = tag

    def encode(self, created_at: datetime, item_id: UUID) -> str:
        payload = json.dumps(
            [self._tag, created_at.isoformat(), str(item_id)], separators=(",", ":")
        )
        return base64.urlsafe_b64encode(payload.encode("ascii")).rstrip(b"=").decode("ascii")

    def decode(self, cursor: str) -> tuple[datetime, UUID]:
        """The (created_at, id) position ``cursor`` names; BadUserInput if it names none."""
        if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
            raise _invalid()
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            raw = base64.b64decode(padded, altchars=b"-_", validate=True)
            tag, created_at, item_id = json.loads(raw.decode("ascii"))
            if tag != self._tag or not isinstance(created_at, str) or not isinstance(item_id, str):
                raise _invalid()
            position = datetime.fromisoformat(created_at), UUID(item_id)
        except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as exc:
            # json.JSONDecodeError is a ValueError; unpacking a wrong shape is Value/TypeError.
            raise _invalid() from exc
        if position[0].tzinfo is None:
            raise _invalid()
        return position


def _invalid() -> BadUserInput:
    return BadUserInput(
        "after is not a valid cursor; pass the cursor of an item from a previous page",
        field="after",
    )
