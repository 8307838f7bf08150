"""A page of a list, and the one rule for what a page says about the items around it.

Every list is read by keyset: its items are ordered by a key, a cursor names an item's
key (:mod:`fortemi.platform.sql` encodes it), and a page after a cursor holds the items
past it. A repository reads ``rows_to_fetch(limit, after)`` rows starting *at* the
cursor's own item (the cursor's ``through`` position) and :func:`page_of` cuts the page:

* ``has_next_page``: a row past the page was found.
* ``has_previous_page``: the item the ``after`` cursor names is still in the list (still
  there and still matching the filter), so at least one item comes before the page. A first
  page (no ``after``) has none. When the cursor's item has since left the list, older
  pages may still hold items and the answer is false: the Relay connection specification
  lets forward pagination (``first``/``after``) answer false when it cannot tell cheaply,
  and asking would cost a second query per page. A page never claims an item that is not
  there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Page", "page_of", "rows_to_fetch"]

T = TypeVar("T")
U = TypeVar("U")
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[tuple[str, T]]  # (opaque cursor, item), in order
    has_next_page: bool
    has_previous_page: bool = False

    @property
    def start_cursor(self) -> str | None:
        return self.items[0][0] if self.items else None

    @property
    def end_cursor(self) -> str | None:
        return self.items[-1][0] if self.items else None

    def map(self, convert: Callable[[T], U]) -> Page[U]:
        """The same page with every item converted (cursors and flags unchanged)."""
        return Page(
            items=[(cursor, convert(item)) for cursor, item in self.items],
            has_next_page=self.has_next_page,
            has_previous_page=self.has_previous_page,
        )


def rows_to_fetch(limit: int, after: object | None) -> int:
    """Rows to read for a page of ``limit``: one more tells whether a next page exists, and
    with a cursor the cursor's own item comes first (see the module)."""
    return limit + 1 + (after is not None)


def page_of(
    rows: Sequence[T],
    *,
    limit: int,
    after: K | None,
    key: Callable[[T], K],
    cursor: Callable[[K], str],
) -> Page[T]:
    """The page of ``limit`` items in ``rows``, read as :func:`rows_to_fetch` says.

    ``after`` is the position the client's cursor named (None on a first page), ``key`` a
    row's position and ``cursor`` a position's cursor.
    """
    has_previous = after is not None and bool(rows) and key(rows[0]) == after
    following = rows[1:] if has_previous else rows
    return Page(
        items=[(cursor(key(row)), row) for row in following[:limit]],
        has_next_page=len(following) > limit,
        has_previous_page=has_previous,
    )
