"""Listing notes: keyset pagination, cursors, filters and counts."""

from __future__ import annotations

import base64
import json
from datetime import UTC, timedelta
from uuid import UUID

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import Note, NoteDraft, NoteFilter, NotePatch, NoteService
from tests.integration.notes.helpers import MAX_PAGE_SIZE


async def _create(notes: NoteService, memory: str, n: int) -> list[Note]:
    return [await notes.create(memory, NoteDraft(title=f"n{i}"), actor=None) for i in range(n)]


async def _walk(
    notes: NoteService, memory: str, first: int, note_filter: NoteFilter | None = None
) -> list[tuple[list[UUID], bool]]:
    """Every page in turn: (ids on the page, has_next_page)."""
    pages: list[tuple[list[UUID], bool]] = []
    after = None
    while True:
        page = await notes.list(
            memory, first=first, after=after, filter=note_filter or NoteFilter()
        )
        pages.append(([note.id for _, note in page.items], page.has_next_page))
        if not page.has_next_page:
            return pages
        after = page.end_cursor


async def test_paging_25_notes_by_10_visits_each_once_newest_first(
    notes: NoteService, memory: str
) -> None:
    created = await _create(notes, memory, 25)

    pages = await _walk(notes, memory, 10)

    assert [(len(ids), more) for ids, more in pages] == [(10, True), (10, True), (5, False)]
    assert [i for ids, _ in pages for i in ids] == [n.id for n in reversed(created)]


async def test_notes_with_equal_created_at_are_ordered_by_id_across_pages(
    notes: NoteService, memory: str, db: Database
) -> None:
    created = await _create(notes, memory, 7)
    async with db.memory_transaction(memory) as conn:
        await conn.execute("UPDATE note SET created_at = '2024-01-01T00:00:00Z'")

    pages = await _walk(notes, memory, 3)

    assert [i for ids, _ in pages for i in ids] == sorted((n.id for n in created), reverse=True)


async def test_each_item_cursor_resumes_right_after_that_item(
    notes: NoteService, memory: str
) -> None:
    await _create(notes, memory, 5)
    everything = await notes.list(memory, first=5, after=None, filter=NoteFilter())
    cursor, second = everything.items[1]
    rest = await notes.list(memory, first=5, after=cursor, filter=NoteFilter())
    assert [n.id for _, n in rest.items] == [n.id for _, n in everything.items[2:]]
    assert second.id not in {n.id for _, n in rest.items}


async def test_first_defaults_to_20(notes: NoteService, memory: str) -> None:
    await _create(notes, memory, 21)
    page = await notes.list(memory, first=None, after=None, filter=NoteFilter())
    assert (len(page.items), page.has_next_page) == (20, True)


async def test_first_is_capped_at_the_max_page_size(
    notes: NoteService, memory: str, db: Database
) -> None:
    small = NoteService(db, max_note_bytes=100, max_page_size=3, max_upsert_batch=1)
    await _create(notes, memory, 4)
    page = await small.list(memory, first=MAX_PAGE_SIZE, after=None, filter=NoteFilter())
    assert (len(page.items), page.has_next_page) == (3, True)


async def test_first_zero_gives_an_empty_page_that_knows_more_exist(
    notes: NoteService, memory: str
) -> None:
    empty = await notes.list(memory, first=0, after=None, filter=NoteFilter())
    assert (empty.items, empty.has_next_page, empty.end_cursor) == ([], False, None)
    await _create(notes, memory, 1)
    page = await notes.list(memory, first=0, after=None, filter=NoteFilter())
    assert (page.items, page.has_next_page) == ([], True)


async def test_negative_first_is_bad_input(notes: NoteService, memory: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        await notes.list(memory, first=-1, after=None, filter=NoteFilter())
    assert caught.value.extensions["field"] == "first"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor!",
        "AAAA",
        _b64(b"\xff\xfe"),
        _b64(b"[1, 2, 3]"),
        _b64(json.dumps(["n1", "yesterday", "x"]).encode()),
        _b64(json.dumps(["n1", "2024-01-01T00:00:00", str(UUID(int=1))]).encode()),
        _b64(json.dumps(["n2", "2024-01-01T00:00:00+00:00", str(UUID(int=1))]).encode()),
        _b64(json.dumps({"a": 1}).encode()),
        _b64(b"[" * 10_000),
        "A" * 10_000,
    ],
)
async def test_a_malformed_or_forged_cursor_is_bad_input(
    notes: NoteService, memory: str, cursor: str
) -> None:
    with pytest.raises(BadUserInput) as caught:
        await notes.list(memory, first=5, after=cursor, filter=NoteFilter())
    assert caught.value.extensions["field"] == "after"


# -- filters --------------------------------------------------------------------------------


@pytest.fixture
async def corpus(notes: NoteService, memory: str) -> dict[str, Note]:
    """Four notes with known tags and attributes; "d" is soft-deleted."""
    drafts = {
        "a": NoteDraft(
            title="a", tags=("x", "y"), project="p1", collection="c1", source="s1", starred=True
        ),
        "b": NoteDraft(title="b", tags=("y",), project="p2", source="s2", archived=True),
        "c": NoteDraft(title="c", tags=("z",), collection="c1"),
        "d": NoteDraft(title="d", tags=("x",), project="p1"),
    }
    created = {key: await notes.create(memory, draft, actor=None) for key, draft in drafts.items()}
    await notes.delete(memory, created["d"].id, actor=None)
    return created


@pytest.mark.parametrize(
    ("note_filter", "expected"),
    [
        (NoteFilter(), "abc"),
        (NoteFilter(tags_all=("x", "y")), "a"),
        (NoteFilter(tags_all=("y",)), "ab"),
        (NoteFilter(tags_any=("x", "z")), "ac"),
        (NoteFilter(tags_all=("y",), tags_any=("x", "z")), "a"),
        (NoteFilter(tags_any=(" z ",)), "c"),  # stripped like stored tags
        (NoteFilter(project="p1"), "a"),
        (NoteFilter(collection="c1"), "ac"),
        (NoteFilter(source="s2"), "b"),
        (NoteFilter(starred=True), "a"),
        (NoteFilter(starred=False), "bc"),
        (NoteFilter(archived=True), "b"),
        (NoteFilter(archived=False), "ac"),
        (NoteFilter(deleted=True), "d"),
        (NoteFilter(deleted=True, tags_all=("y",)), ""),
        (NoteFilter(project="none-such"), ""),
    ],
)
async def test_filters_select_the_matching_live_notes_in_list_and_count(
    notes: NoteService,
    memory: str,
    corpus: dict[str, Note],
    note_filter: NoteFilter,
    expected: str,
) -> None:
    page = await notes.list(memory, first=None, after=None, filter=note_filter)
    assert "".join(sorted(note.title for _, note in page.items)) == expected
    assert await notes.count(memory, note_filter) == len(expected)


async def test_created_after_is_inclusive_and_created_before_exclusive(
    notes: NoteService, memory: str, corpus: dict[str, Note]
) -> None:
    at = corpus["b"].created_at
    cases = {
        NoteFilter(created_after=at): "bc",
        NoteFilter(created_before=at): "a",
        NoteFilter(created_after=at, created_before=corpus["c"].created_at): "b",
        NoteFilter(created_after=at + timedelta(days=1)): "",
    }
    for note_filter, expected in cases.items():
        page = await notes.list(memory, first=None, after=None, filter=note_filter)
        assert "".join(sorted(n.title for _, n in page.items)) == expected, note_filter
        assert await notes.count(memory, note_filter) == len(expected)


async def test_updated_after_is_inclusive_and_updated_before_exclusive(
    notes: NoteService, memory: str, corpus: dict[str, Note]
) -> None:
    touched = await notes.update(memory, corpus["a"].id, NotePatch(content="new"), actor=None)
    at = touched.updated_at
    for note_filter, expected in {
        NoteFilter(updated_after=at): "a",
        NoteFilter(updated_before=at): "bc",
    }.items():
        page = await notes.list(memory, first=None, after=None, filter=note_filter)
        assert "".join(sorted(n.title for _, n in page.items)) == expected, note_filter
        assert await notes.count(memory, note_filter) == len(expected)


async def test_a_naive_datetime_filter_is_read_as_utc(
    notes: NoteService, memory: str, corpus: dict[str, Note]
) -> None:
    naive = corpus["b"].created_at.astimezone(UTC).replace(tzinfo=None)
    assert naive.tzinfo is None
    assert await notes.count(memory, NoteFilter(created_after=naive)) == 2


async def test_pagination_respects_the_filter(notes: NoteService, memory: str) -> None:
    for i in range(7):
        await notes.create(
            memory, NoteDraft(title=f"n{i}", tags=("even",) if i % 2 == 0 else ()), actor=None
        )
    pages = await _walk(notes, memory, 3, NoteFilter(tags_all=("even",)))
    assert [(len(ids), more) for ids, more in pages] == [(3, True), (1, False)]


async def test_filter_text_with_nul_is_bad_input_not_a_server_error(
    notes: NoteService, memory: str
) -> None:
    for note_filter in (NoteFilter(project="p\x00"), NoteFilter(tags_any=("\ud800",))):
        with pytest.raises(BadUserInput):
            await notes.list(memory, first=None, after=None, filter=note_filter)
        with pytest.raises(BadUserInput):
            await notes.count(memory, note_filter)
