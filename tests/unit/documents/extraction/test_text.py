"""Plain text: lossy UTF-8, counts, byte-order marks, binary refused, the text limit."""

from __future__ import annotations

from fortemi.documents.extraction import ExtractionStatus, Limits
from tests.unit.documents.extraction._helpers import extract


def test_text_is_extracted_with_character_word_and_line_counts() -> None:
    found = extract("héllo wörld\nsecond line\n".encode(), "notes.txt")

    assert found.status is ExtractionStatus.DONE
    assert found.adapter == "text"
    assert found.text == "héllo wörld\nsecond line\n"
    assert {k: found.metadata[k] for k in ("chars", "words", "lines")} == {
        "chars": 24,
        "words": 4,
        "lines": 2,
    }
    assert found.metadata["truncated"] is False


def test_bytes_that_are_not_utf8_are_replaced_and_counted() -> None:
    found = extract(b"caf\xe9 cr\xe8me and more words to make it text", "menu.txt")

    assert found.status is ExtractionStatus.DONE
    assert found.text.startswith("caf\ufffd cr\ufffdme")
    assert found.metadata["replaced_characters"] == 2


def test_a_utf16_file_with_its_byte_order_mark_is_decoded() -> None:
    found = extract("# Überschrift\n".encode("utf-16"), "readme.md")

    assert (found.status, found.text) == (ExtractionStatus.DONE, "# Überschrift\n")
    assert found.metadata["encoding"] == "utf-16"


def test_code_is_text_with_counts() -> None:
    found = extract(b"def f():\n    return 1\n", "f.py")

    assert (found.adapter, found.metadata["lines"]) == ("text", 2)


def test_binary_garbage_declared_as_text_fails_as_not_text() -> None:
    garbage = bytes(range(256)) * 8

    found = extract(garbage, "notes.txt", "text/plain")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("not_text: ")
    assert found.text == ""


def test_huge_text_is_cut_at_the_limit_on_a_character_boundary_and_says_so() -> None:
    limit = 1000
    data = "é".encode() * 5000  # two bytes each: the limit falls on a boundary or not

    found = extract(data, "big.txt", limits=Limits(max_text_bytes=limit + 1))

    assert found.status is ExtractionStatus.DONE
    assert found.metadata["truncated"] is True
    assert found.text == "é" * 500
    assert len(found.text.encode()) <= limit + 1


def test_the_preview_is_short_and_collapses_whitespace() -> None:
    found = extract(b"first   line\n\n\tsecond " + b"word " * 200, "a.txt")

    assert found.preview is not None
    assert found.preview.startswith("first line second word")
    assert len(found.preview) <= 280
