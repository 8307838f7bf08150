"""The one page rule: a page read from the cursor's own row on says truthfully what lies
before and after it, and never shows the cursor's row again."""

from __future__ import annotations

from fortemi.platform.pages import Page, page_of, rows_to_fetch


def _page(rows: list[int], *, limit: int, after: int | None) -> Page[int]:
    # Rows are their own keys; a list read newest first has descending keys.
    return page_of(rows, limit=limit, after=after, key=lambda row: row, cursor=str)


def test_a_first_page_reads_one_row_more_and_has_nothing_before_it() -> None:
    assert rows_to_fetch(2, None) == 3
    page = _page([9, 8, 7], limit=2, after=None)
    assert page.items == [("9", 9), ("8", 8)]
    assert (page.has_previous_page, page.has_next_page) == (False, True)
    assert (page.start_cursor, page.end_cursor) == ("9", "8")


def test_a_page_after_a_cursor_whose_row_is_still_listed_has_something_before_it() -> None:
    assert rows_to_fetch(2, 8) == 4
    page = _page([8, 7, 6, 5], limit=2, after=8)
    assert page.items == [("7", 7), ("6", 6)]
    assert (page.has_previous_page, page.has_next_page) == (True, True)


def test_the_last_page_has_nothing_after_it() -> None:
    page = _page([6, 5], limit=2, after=6)
    assert page.items == [("5", 5)]
    assert (page.has_previous_page, page.has_next_page) == (True, False)


def test_a_page_after_a_cursor_whose_row_left_the_list_keeps_every_row_it_read() -> None:
    # The cursor named 8, since deleted: 7 is the first row read and belongs to the page.
    page = _page([7, 6, 5], limit=2, after=8)
    assert page.items == [("7", 7), ("6", 6)]
    assert (page.has_previous_page, page.has_next_page) == (False, True)


def test_an_empty_page_still_says_whether_rows_follow() -> None:
    following = _page([8, 7], limit=0, after=8)
    assert (following.items, following.has_previous_page, following.has_next_page) == (
        [],
        True,
        True,
    )
    nothing = _page([], limit=0, after=None)
    assert (nothing.items, nothing.has_next_page, nothing.start_cursor, nothing.end_cursor) == (
        [],
        False,
        None,
        None,
    )


def test_mapping_a_page_keeps_its_cursors_and_what_it_says_about_its_neighbours() -> None:
    page = _page([8, 7, 6, 5], limit=2, after=8).map(lambda row: row * 10)
    assert page == Page(items=[("7", 70), ("6", 60)], has_next_page=True, has_previous_page=True)
