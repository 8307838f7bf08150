"""What a stored file is called, and what type a download is sent as."""

from __future__ import annotations

import pytest

from fortemi.documents.attachments.service import clean_filename, clean_mime
from fortemi.graphql.downloads import served_type


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\x\\evil.exe", "evil.exe"),
        ("a\x00b\x1b[31m.txt", "ab[31m.txt"),
        ("..", "file"),
        ("", "file"),
        (None, "file"),
        ("  spaced.md  ", "spaced.md"),
    ],
)
def test_a_filename_keeps_its_last_component_without_control_characters(
    given: str | None, kept: str
) -> None:
    assert clean_filename(given) == kept


def test_a_long_filename_is_cut_to_255_characters_keeping_its_extension() -> None:
    name = clean_filename("x" * 400 + ".tar.gz")
    assert len(name) == 255
    assert name.endswith(".gz")


@pytest.mark.parametrize(
    ("declared", "kept"),
    [("Text/Plain; charset=utf-8", "text/plain"), ("nonsense", None), (None, None), ("", None)],
)
def test_a_declared_mime_type_is_normalised_or_dropped(
    declared: str | None, kept: str | None
) -> None:
    assert clean_mime(declared) == kept


@pytest.mark.parametrize(
    "active",
    ["text/html", "image/svg+xml", "application/xhtml+xml", "text/javascript", "application/xml",
     "application/atom+xml", "application/pdf", "multipart/related", "message/rfc822"],
)  # fmt: skip
def test_types_a_browser_would_run_are_sent_as_opaque_bytes(active: str) -> None:
    assert served_type(active) == "application/octet-stream"


@pytest.mark.parametrize("inert", ["image/png", "text/plain", "application/zip", "text/csv"])
def test_inert_types_are_sent_as_detected(inert: str) -> None:
    assert served_type(inert) == inert
