"""Note comparison: state changes, jsonb-like equality, unified diffs of versions."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import pytest

from fortemi.platform.notes.diff import (
    apply_item,
    apply_patch,
    json_equal,
    owner_after,
    same_state,
    unified_diff,
    versioned_change,
)
from fortemi.platform.notes.models import (
    ChangePolicy,
    ExternalItem,
    NoteDraft,
    NotePatch,
    NoteVersion,
)


def _version(
    number: int,
    title: str,
    content: str,
    *,
    tags: tuple[str, ...] = (),
    metadata: dict[str, object] | None = None,
    format: str = "markdown",
) -> NoteVersion:
    return NoteVersion(
        note_id=UUID(int=1),
        version=number,
        title=title,
        content=content,
        format=format,
        metadata=metadata or {},
        tags=tags,
        content_hash="",
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        created_by=None,
    )


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (10**20, 1e20, True),
        (0.0, -0.0, True),
        (True, 1, False),
        (False, 0, False),
        (None, 0, False),
        ("1", 1, False),
        ([1, 2], (1, 2), True),
        ([1, 2], [2, 1], False),
        ({"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]}, True),
        ({"a": 1}, {"a": 1, "b": None}, False),
        ({"a": {"b": 1}}, {"a": {"b": True}}, False),
    ],
)
def test_json_equal_compares_as_jsonb_does(a: object, b: object, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_only_text_fields_make_a_versioned_change() -> None:
    base = NoteDraft(title="t", content="c", metadata={"k": 1}, tags=("x",))
    for changed in (
        NoteDraft(title="T", content="c", metadata={"k": 1}, tags=("x",)),
        NoteDraft(title="t", content="c", metadata={"k": True}, tags=("x",)),
        NoteDraft(title="t", content="c", metadata={"k": 1}, tags=("x", "y")),
        NoteDraft(title="t", content="c", metadata={"k": 1}, tags=("x",), format="text"),
    ):
        assert versioned_change(base, changed)
    moved = NoteDraft(title="t", content="c", metadata={"k": 1}, tags=("x",), starred=True)
    assert not versioned_change(base, moved)
    assert not same_state(base, moved)
    assert same_state(base, NoteDraft(title="t", content="c", metadata={"k": 1.0}, tags=("x",)))


def test_apply_patch_changes_only_the_sent_fields() -> None:
    base = NoteDraft(title="t", content="c", collection="inbox", starred=True)
    patched = apply_patch(base, NotePatch(content="d", collection=None))
    assert patched == NoteDraft(title="t", content="d", collection=None, starred=True)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (ChangePolicy.VERSION, NoteDraft(title="t", content="new", tags=("x",), project="p")),
        (ChangePolicy.CONFLICT, NoteDraft(title="t", content="new", tags=("x",), project="p")),
        (ChangePolicy.REPLACE, NoteDraft(title="", content="new", tags=(), project=None)),
    ],
)
def test_apply_item_fills_omitted_fields_by_policy(
    policy: ChangePolicy, expected: NoteDraft
) -> None:
    base = NoteDraft(title="t", content="old", tags=("x",), project="p")
    assert apply_item(base, ExternalItem("id", content="new"), policy) == expected


def test_apply_item_never_touches_starred_archived_or_source() -> None:
    base = NoteDraft(source="vault", starred=True, archived=True)
    result = apply_item(base, ExternalItem("id"), ChangePolicy.REPLACE)
    assert (result.source, result.starred, result.archived) == ("vault", True, True)


@pytest.mark.parametrize(
    ("owner", "item", "policy", "expected"),
    [
        # A new note: what the item names, nothing else, whatever the policy.
        (None, ExternalItem("id"), ChangePolicy.VERSION, (None, None)),
        (None, ExternalItem("id", project="p"), ChangePolicy.VERSION, ("p", None)),
        (None, ExternalItem("id", skill="s"), ChangePolicy.CONFLICT, (None, "s")),
        # An existing note keeps an owner the item omits...
        (("p", "s"), ExternalItem("id"), ChangePolicy.VERSION, ("p", "s")),
        (("p", None), ExternalItem("id", skill="s"), ChangePolicy.CONFLICT, ("p", "s")),
        # ...except under REPLACE, which clears what the item omits.
        (("p", "s"), ExternalItem("id"), ChangePolicy.REPLACE, (None, None)),
        (("p", "s"), ExternalItem("id", project="q"), ChangePolicy.REPLACE, ("q", None)),
        # An explicit null moves the note out of its project.
        (("p", None), ExternalItem("id", project=None), ChangePolicy.VERSION, (None, None)),
    ],
)
def test_owner_after_is_the_owner_the_upsert_writes(
    owner: tuple[str | None, str | None] | None,
    item: ExternalItem,
    policy: ChangePolicy,
    expected: tuple[str | None, str | None],
) -> None:
    assert owner_after(owner, item, policy) == expected
    # The same rule as the upsert's own: apply_item over the note's state.
    if owner is not None:
        state = apply_item(NoteDraft(project=owner[0], skill=owner[1]), item, policy)
        assert (state.project, state.skill) == expected


def test_unified_diff_of_identical_text_is_empty() -> None:
    assert unified_diff(_version(1, "t", "a\nb\n"), _version(2, "t", "a\nb\n")) == ("", 0, 0)


def test_unified_diff_counts_changed_lines_not_hunk_headers() -> None:
    # Lines that start with "++" or "--" must not be mistaken for diff headers.
    text, added, deleted = unified_diff(
        _version(1, "t", "keep\n-- old\n"), _version(2, "t", "keep\n++ new\n+++ newer\n")
    )
    assert (added, deleted) == (2, 1)
    assert "+++ newer\n" in text
    assert text.startswith("--- v1/content\n+++ v2/content\n")


def test_unified_diff_shows_a_change_of_the_final_newline() -> None:
    text, added, deleted = unified_diff(_version(1, "t", "a"), _version(2, "t", "a\n"))
    assert (added, deleted) == (1, 1)
    assert "\\ No newline at end of file\n" in text


def test_unified_diff_splits_lines_only_at_newline() -> None:
    text, added, deleted = unified_diff(_version(1, "t", "a\rb\n"), _version(2, "t", "a\rc\n"))
    assert (added, deleted) == (1, 1)
    assert "-a\rb\n" in text


def test_unified_diff_shows_a_version_made_by_a_change_of_tags_alone() -> None:
    text, added, deleted = unified_diff(
        _version(1, "t", "same\n", tags=("a", "b")), _version(2, "t", "same\n", tags=("a", "c"))
    )
    assert text == "--- v1/tags\n+++ v2/tags\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert (added, deleted) == (1, 1)


def test_unified_diff_shows_metadata_changes_and_ignores_key_order() -> None:
    old = _version(1, "t", "x", metadata={"b": 1, "a": [1, 2]})
    reordered = _version(2, "t", "x", metadata={"a": [1, 2], "b": 1})
    assert unified_diff(old, reordered) == ("", 0, 0)
    text, added, deleted = unified_diff(old, _version(3, "t", "x", metadata={"a": [1, 2], "b": 2}))
    assert text.startswith("--- v1/metadata\n+++ v3/metadata\n")
    assert '-  "b": 1\n+  "b": 2\n' in text
    assert (added, deleted) == (1, 1)


def test_unified_diff_sections_follow_title_content_format_tags_metadata() -> None:
    text, _, _ = unified_diff(
        _version(1, "old", "a\n", tags=("x",), metadata={"k": 1}, format="markdown"),
        _version(2, "new", "b\n", tags=("y",), metadata={"k": 2}, format="plain"),
    )
    headers = [line for line in text.splitlines() if line.startswith("--- ")]
    assert headers == [
        "--- v1/title",
        "--- v1/content",
        "--- v1/format",
        "--- v1/tags",
        "--- v1/metadata",
    ]
