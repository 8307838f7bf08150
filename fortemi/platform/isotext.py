"""Stored times read as the ISO 8601 text a client receives, written by PostgreSQL.

A ``timestamptz`` column read by asyncpg becomes a UTC ``datetime`` (``+00:00``), and the
GraphQL ``DateTime`` scalar answers ``value.isoformat()``. For a response that carries
hundreds of times (a neighbourhood's nodes and edges), decoding each into a ``datetime``
and formatting it back, one Python call each, is a measurable part of the request. SQL can
write the very same text: :func:`iso_text_sql` is the expression, and :class:`IsoTimes` the
column that carries the texts, handing out ``datetime`` values to whoever asks for items
(they round-trip: ``datetime.fromisoformat(t).isoformat() == t``), while a completion that
knows the scalar formats with ``isoformat`` passes :attr:`IsoTimes.texts` on unchanged.

The text is exactly ``isoformat()`` of what asyncpg would decode, in any session time zone
(the expression converts to UTC itself): ``YYYY-MM-DDTHH:MM:SS``, then ``.ffffff`` only
when the microseconds are not zero, then ``+00:00``. asyncpg decodes ``infinity`` and
``-infinity`` to the naive ``datetime.max`` and ``datetime.min``, so those are written as
their (offset-less) ``isoformat()``. Years outside 1..9999, which asyncpg cannot decode at
all (the read fails), are written as PostgreSQL formats them and fail only if an item is
asked for as a ``datetime``. ``tests/integration/platform/test_isotext.py`` compares the
two on real rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import overload

__all__ = ["IsoTimes", "iso_text_sql"]

_INFINITY = datetime.max.isoformat()
_NEGATIVE_INFINITY = datetime.min.isoformat()


def iso_text_sql(column: str) -> str:
    """The SQL expression giving ``column`` (a ``timestamptz`` expression from fixed SQL,
    never user input) as asyncpg's decoded value's ``isoformat()``; NULL gives NULL."""
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (
        f"(CASE WHEN NOT isfinite({column}) THEN"
        f" CASE WHEN {column} > 'epoch'::timestamptz THEN '{_INFINITY}'"
        f" ELSE '{_NEGATIVE_INFINITY}' END"
        f" WHEN date_trunc('second', {utc}) = {utc}"
        f""" THEN to_char({utc}, 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')"""
        f""" ELSE to_char({utc}, 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"') END)"""
    )


class IsoTimes(Sequence[datetime]):
    """A column of times (none NULL) kept as their ``isoformat()`` texts; items are the
    ``datetime`` values, parsed when asked for."""

    __slots__ = ("texts",)

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, index: int) -> datetime: ...

    @overload
    def __getitem__(self, index: slice) -> IsoTimes: ...

    def __getitem__(self, index: int | slice) -> datetime | IsoTimes:
        if isinstance(index, slice):
            return IsoTimes(self.texts[index])
        return datetime.fromisoformat(self.texts[index])

    def __iter__(self) -> Iterator[datetime]:
        return map(datetime.fromisoformat, self.texts)
