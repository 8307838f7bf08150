"""Input checks for notes, without a database."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.models import UNSET, ExternalItem, NoteDraft, NoteFilter, NotePatch
from fortemi.platform.notes.validation import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_TAGS,
    validate_batch,
    validate_content,
    validate_draft,
    validate_filter,
    validate_format,
    validate_label,
    validate_metadata,
    validate_patch,
    validate_tags,
    validate_text,
    validate_title,
)


def _field_of(call: Any, *args: Any, **kwargs: Any) -> Any:
    with pytest.raises(BadUserInput) as caught:
        call(*args, **kwargs)
    return caught.value.extensions.get("field")


@pytest.mark.parametrize("text", ["a\x00", "\x00", "x\ud800y", "\udc00", "emoji half \ud83d"])
def test_text_with_nul_or_a_lone_surrogate_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(BadUserInput, match="title must be valid UTF-8 text without NUL"):
        validate_text(text, "title")


@pytest.mark.parametrize("text", ["", "plain", "emoji \U0001f600", "tab\tnew\nline", "\u2028"])
def test_ordinary_text_is_accepted_unchanged(text: str) -> None:
    assert validate_text(text, "title") == text


def test_a_non_string_is_refused() -> None:
    assert _field_of(validate_text, 5, "title") == "title"


def test_content_is_limited_in_utf8_bytes() -> None:
    assert validate_content("éé", max_bytes=4) == "éé"
    with pytest.raises(BadUserInput) as caught:
        validate_content("ééé", max_bytes=5)
    error = caught.value
    assert "6 bytes" in error.message
    assert "5 bytes" in error.message
    assert "FORTEMI_MAX_NOTE_BYTES" in error.message
    assert error.extensions == {"field": "content", "limit": 5, "size": 6}


def test_title_is_limited_to_1000_characters() -> None:
    assert validate_title("t" * 1000) == "t" * 1000
    assert _field_of(validate_title, "t" * 1001) == "title"


@pytest.mark.parametrize("fmt", ["markdown", "md", "text/plain", "text/x-rst", "a", "org+x.1"])
def test_format_names_are_accepted(fmt: str) -> None:
    assert validate_format(fmt) == fmt


@pytest.mark.parametrize(
    "fmt", ["", "Markdown", "-md", ".md", "text plain", "markdown\n", "a" * 65, "é"]
)
def test_malformed_format_names_are_refused(fmt: str) -> None:
    assert _field_of(validate_format, fmt) == "format"


def test_labels_are_optional_short_text() -> None:
    assert validate_label(None, "project") is None
    assert validate_label("p" * 200, "project") == "p" * 200
    assert _field_of(validate_label, "p" * 201, "project") == "project"
    assert _field_of(validate_label, "p\x00", "collection") == "collection"


def test_tags_are_stripped_and_deduplicated_keeping_first_order() -> None:
    assert validate_tags(["  b ", "a", "b", "a ", "c"]) == ("b", "a", "c")
    assert validate_tags(()) == ()


def test_at_most_100_distinct_tags_are_allowed() -> None:
    assert len(validate_tags([f"t{i}" for i in range(MAX_TAGS)] + ["t0"])) == MAX_TAGS
    assert _field_of(validate_tags, [f"t{i}" for i in range(MAX_TAGS + 1)]) == "tags"


@pytest.mark.parametrize("tags", ["tag", ["ok", ""], ["  "], ["t" * 201], ["a\x00"], [1], None])
def test_bad_tags_are_refused(tags: Any) -> None:
    assert _field_of(validate_tags, tags) == "tags"


def test_metadata_is_returned_as_a_fresh_json_copy() -> None:
    source = {"list": (1, 2), "nested": {"x": None}, "n": 1.5, "b": False}
    copy = validate_metadata(source)
    assert copy == {"list": [1, 2], "nested": {"x": None}, "n": 1.5, "b": False}
    copy["nested"]["x"] = 1
    assert source["nested"] == {"x": None}


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param([1], id="not-an-object"),
        pytest.param("{}", id="a-string"),
        pytest.param({1: "int key"}, id="non-string-key"),
        pytest.param({"k": float("nan")}, id="nan"),
        pytest.param({"k": float("inf")}, id="infinity"),
        pytest.param({"k": {1, 2}}, id="a-set"),
        pytest.param({"k": datetime(2024, 1, 1, tzinfo=UTC)}, id="a-datetime"),
        pytest.param({"k": "v\x00"}, id="nul-value"),
        pytest.param({"k\ud800": 1}, id="surrogate-key"),
        pytest.param({"k": "x" * MAX_METADATA_BYTES}, id="over-64-kib"),
    ],
)
def test_metadata_that_is_not_a_small_clean_json_object_is_refused(metadata: Any) -> None:
    assert _field_of(validate_metadata, metadata) == "metadata"


def test_metadata_nesting_is_bounded() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(MAX_METADATA_DEPTH):
        node["k"] = {}
        node = node["k"]
    validate_metadata(deep)
    node["k"] = {}
    assert _field_of(validate_metadata, deep) == "metadata"


def test_a_self_containing_metadata_object_is_refused_not_a_crash() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert _field_of(validate_metadata, loop) == "metadata"


def test_the_nul_message_names_the_path_inside_metadata() -> None:
    with pytest.raises(BadUserInput, match=r"metadata\['a'\]\[1\]"):
        validate_metadata({"a": ["ok", "bad\x00"]})


def test_a_draft_is_normalised() -> None:
    draft = validate_draft(NoteDraft(tags=(" a", "a")), max_note_bytes=10)
    assert draft.tags == ("a",)


@pytest.mark.parametrize("field", ["starred", "archived"])
def test_draft_flags_must_be_booleans(field: str) -> None:
    flags: dict[str, Any] = {field: "yes"}
    draft = NoteDraft(**flags)
    assert _field_of(validate_draft, draft, max_note_bytes=10) == field


def test_a_patch_keeps_unset_fields_unset_and_checks_sent_ones() -> None:
    patch = validate_patch(NotePatch(tags=["x", "x"], project=None), max_note_bytes=10)
    assert patch.tags == ("x",)
    assert patch.project is None
    assert patch.title is UNSET
    assert patch.collection is UNSET


@pytest.mark.parametrize("field", ["title", "content", "format", "metadata", "tags", "starred"])
def test_a_patch_cannot_null_a_required_field(field: str) -> None:
    with pytest.raises(BadUserInput, match="cannot be null"):
        validate_patch(NotePatch(**{field: None}), max_note_bytes=10)


@pytest.mark.parametrize("expected", [0, -1, True, "1"])
def test_expected_version_must_be_a_positive_integer(expected: Any) -> None:
    patch = NotePatch(expected_version=expected)
    assert _field_of(validate_patch, patch, max_note_bytes=10) == "expected_version"


def _batch(items: list[ExternalItem], max_batch: int = 5) -> tuple[str, list[ExternalItem]]:
    return validate_batch("vault", items, max_note_bytes=10, max_batch=max_batch)


def test_a_batch_comes_back_checked_in_order() -> None:
    source, items = _batch([ExternalItem("b", tags=(" t",)), ExternalItem("a")])
    assert source == "vault"
    assert [(i.external_id, i.tags) for i in items] == [("b", ("t",)), ("a", UNSET)]


def test_a_bad_item_is_named_by_index_and_external_id() -> None:
    with pytest.raises(BadUserInput) as caught:
        _batch([ExternalItem("ok"), ExternalItem("notes/x.md", content="x" * 11)])
    error = caught.value
    assert error.message.startswith("item 1 (external id 'notes/x.md'): content is 11 bytes")
    assert error.extensions["index"] == 1
    assert error.extensions["external_id"] == "notes/x.md"
    assert error.extensions["field"] == "content"


@pytest.mark.parametrize("external_id", ["", "x\x00", "\ud800", "x" * 1001])
def test_an_invalid_external_id_is_refused_without_echoing_it_raw(external_id: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        _batch([ExternalItem(external_id)])
    assert caught.value.extensions["field"] == "external_id"
    assert "\x00" not in caught.value.message
    assert "\ud800" not in caught.value.message
    assert len(caught.value.message) < 300


def test_duplicate_external_ids_are_refused_naming_both_items() -> None:
    with pytest.raises(BadUserInput, match=r"'a' appears twice in the batch \(items 0 and 2\)"):
        _batch([ExternalItem("a"), ExternalItem("b"), ExternalItem("a")])


@pytest.mark.parametrize("size", [0, 6])
def test_a_batch_must_hold_1_to_max_items(size: int) -> None:
    with pytest.raises(BadUserInput, match="FORTEMI_MAX_UPSERT_BATCH"):
        _batch([ExternalItem(str(i)) for i in range(size)])


def test_a_filter_is_checked_and_normalised() -> None:
    naive = datetime(2024, 1, 1)  # a naive time is what is under test
    checked = validate_filter(NoteFilter(tags_any=(" x ",), created_after=naive))
    assert checked.tags_any == ("x",)
    assert checked.created_after == datetime(2024, 1, 1, tzinfo=UTC)
    assert _field_of(validate_filter, NoteFilter(source="\x00")) == "source"
    assert _field_of(validate_filter, NoteFilter(tags_all="x")) == "tags_all"  # type: ignore[arg-type]
