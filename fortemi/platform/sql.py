"""Small SQL building blocks shared by the repositories.

* :class:`Where` builds a WHERE clause from fixed fragments, every value a ``$n``
  parameter: filters never splice caller input into SQL text.
* :class:`KeysetCursor` and :class:`SerialCursor` are the one cursor codec of every list:
  a position (``created_at DESC, id DESC``, or a serial ``id DESC``) as an opaque cursor,
  base64url, unpadded, of the JSON ``[tag, *position]``. The tag keeps one list's cursor
  from being read as another's and lets the format change later. A cursor only names a
  position, so a forged one can at most start a page elsewhere; anything that does not
  decode to a position is the caller's error, never a server error.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar
from uuid import UUID

from fortemi.platform.errors import BadUserInput
from fortemi.platform.pages import Page, page_of

__all__ = ["KeysetCursor", "SerialCursor", "Where"]

# A real cursor is about 110 characters; anything far longer is not one of ours.
_MAX_CURSOR_CHARS = 256
_MAX_UUID = 2**128 - 1
# The greatest bigint is no cursor's: ``SerialCursor.through`` adds one to an id, and the
# sum must still bind as a bigint. A serial never gets there.
_MAX_SERIAL = 2**63 - 1


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


class _Created(Protocol):
    """A row a :class:`KeysetCursor` pages over."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> UUID: ...


class _Serial(Protocol):
    """A row a :class:`SerialCursor` pages over."""

    @property
    def id(self) -> int: ...


def _pack(*parts: str | int) -> str:
    payload = json.dumps(list(parts), separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode("ascii")).rstrip(b"=").decode("ascii")


def _unpack(cursor: str, tag: str, count: int) -> list[Any]:
    """The ``count`` parts after ``tag`` that ``cursor`` carries; BadUserInput otherwise."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
        raise _invalid()
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        parts = json.loads(raw.decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        # json.JSONDecodeError is a ValueError.
        raise _invalid() from exc
    if not isinstance(parts, list) or len(parts) != count + 1 or parts[0] != tag:
        raise _invalid()
    return parts[1:]


_C = TypeVar("_C", bound=_Created)
_S = TypeVar("_S", bound=_Serial)


class KeysetCursor:
    """Cursors over a list ordered ``created_at DESC, id DESC``."""

    def __init__(self, tag: str) -> None:
        self._tag = tag

    def encode(self, created_at: datetime, item_id: UUID) -> str:
        return _pack(self._tag, created_at.isoformat(), str(item_id))

    def decode(self, cursor: str) -> tuple[datetime, UUID]:
        """The (created_at, id) position ``cursor`` names; BadUserInput if it names none."""
        created_at, item_id = _unpack(cursor, self._tag, 2)
        if not isinstance(created_at, str) or not isinstance(item_id, str):
            raise _invalid()
        try:
            position = datetime.fromisoformat(created_at), UUID(item_id)
        except ValueError as exc:
            raise _invalid() from exc
        if position[0].tzinfo is None:
            raise _invalid()
        return position

    @staticmethod
    def through(position: tuple[datetime, UUID] | None) -> tuple[datetime, UUID] | None:
        """The least position past ``position``: rows strictly before it are ``position``'s
        own row and those after it, as :func:`~fortemi.platform.pages.page_of` needs.

        No uuid lies between an id and the next integer (PostgreSQL orders uuid by its 16
        bytes, big-endian), and past the greatest uuid comes the next microsecond
        (timestamptz's resolution) with the least.
        """
        if position is None:
            return None
        created_at, item_id = position
        if item_id.int == _MAX_UUID:
            return created_at + timedelta(microseconds=1), UUID(int=0)
        return created_at, UUID(int=item_id.int + 1)

    def page(
        self, rows: Sequence[_C], *, limit: int, after: tuple[datetime, UUID] | None
    ) -> Page[_C]:
        """:func:`~fortemi.platform.pages.page_of` for rows read past :meth:`through`."""
        return page_of(
            rows,
            limit=limit,
            after=after,
            key=lambda row: (row.created_at, row.id),
            cursor=lambda key: self.encode(*key),
        )


class SerialCursor:
    """Cursors over a list ordered by a positive bigint ``id DESC``."""

    def __init__(self, tag: str) -> None:
        self._tag = tag

    def encode(self, item_id: int) -> str:
        return _pack(self._tag, item_id)

    def decode(self, cursor: str) -> int:
        """The id ``cursor`` names; BadUserInput if it names none."""
        (item_id,) = _unpack(cursor, self._tag, 1)
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise _invalid()
        if not 0 < item_id < _MAX_SERIAL:
            raise _invalid()
        return item_id

    @staticmethod
    def through(position: int | None) -> int | None:
        """The least id past ``position`` (see :meth:`KeysetCursor.through`)."""
        return None if position is None else position + 1

    def page(self, rows: Sequence[_S], *, limit: int, after: int | None) -> Page[_S]:
        return page_of(rows, limit=limit, after=after, key=lambda row: row.id, cursor=self.encode)


def _invalid() -> BadUserInput:
    return BadUserInput(
        "after is not a valid cursor; pass the cursor of an item from a previous page",
        field="after",
    )
