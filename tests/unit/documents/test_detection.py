"""The detection cascade: each step in its order with its confidence and method, content
sniffing, MIME lies, and binary versus text."""

from __future__ import annotations

import base64
import gzip
import io
import zipfile

import pytest

from fortemi.documents.detection import PREFIX_BYTES, detect, looks_binary
from fortemi.documents.models import ChunkingStrategy, Detection, Method
from fortemi.documents.registry import TypeIndex, parse_type, system_index, system_types

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"


def _run(
    filename: str | None = None, mime: str | None = None, content: bytes = b"", **kw: str
) -> Detection:
    return detect(system_index(), filename, mime, content, **kw)


def _zip(*members: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in members:
            archive.writestr(name, "<x/>")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("filename", "mime", "content", "name", "method", "confidence"),
    [
        pytest.param("Dockerfile", "text/x-python", b"FROM alpine\n", "dockerfile", Method.FILENAME, 1.0, id="filename-first"),
        pytest.param("notes.py", "text/markdown", b"# hi\n", "markdown", Method.MIME, 0.95, id="mime-before-extension"),
        pytest.param("notes.py", None, b'{"a": 1}', "python", Method.EXTENSION, 0.9, id="extension-before-content"),
        pytest.param(None, None, b'{"a": [1, 2]}', "json", Method.STRUCTURE, 0.7, id="content"),
        pytest.param("x.unknownext", None, b"just some words", "plaintext", Method.FALLBACK, 0.1, id="fallback"),
        pytest.param(None, None, b"", "plaintext", Method.FALLBACK, 0.1, id="empty"),
    ],
)  # fmt: skip
def test_the_cascade_answers_at_its_first_step_that_knows(
    filename: str | None, mime: str | None, content: bytes, name: str, method: Method,
    confidence: float,
) -> None:  # fmt: skip
    found = _run(filename, mime, content)

    assert (found.type.name, found.method, found.confidence) == (name, method, confidence)


def test_confidence_decides_the_strategy_and_the_review_flag() -> None:
    sure = _run("main.go")
    sniffed = _run(None, None, b"#!/usr/bin/env python3\nprint('hi')\n")
    unknown = _run(None, None, b"hello there")

    assert (sure.strategy, sure.flagged_for_review) == (ChunkingStrategy.SYNTACTIC, False)
    assert (sniffed.type.name, sniffed.method) == ("python", Method.SHEBANG)
    assert (sniffed.strategy, sniffed.flagged_for_review) == (ChunkingStrategy.SYNTACTIC, True)
    assert (unknown.strategy, unknown.flagged_for_review) == (ChunkingStrategy.SEMANTIC, False)


def test_a_low_confidence_detection_of_a_non_prose_type_falls_back_to_semantic() -> None:
    found = Detection(system_index().by_name["csv"], 0.5, Method.STRUCTURE)

    assert found.strategy is ChunkingStrategy.SEMANTIC


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        ("package.json", "npm-package"),
        ("Cargo.toml", "cargo-manifest"),
        ("pyproject.toml", "pyproject"),
        ("index.d.ts", "typescript-declaration"),
        ("Dockerfile.dev", "dockerfile"),
        ("makefile", "makefile"),
        (".env", "dotenv"),
        (".env.production", "dotenv"),
        ("requirements-dev.txt", "python-requirements"),
        ("docs/CMakeLists.txt", "cmake"),
    ],
)
def test_filename_patterns_beat_extensions(filename: str, name: str) -> None:
    found = _run(filename, None, b"")

    assert (found.type.name, found.method, found.confidence) == (name, Method.FILENAME, 1.0)


def test_a_declared_mime_type_that_strong_magic_contradicts_is_recorded_as_a_lie() -> None:
    found = _run("scan.png", "image/png", PDF)

    assert (found.type.name, found.method, found.claimed) == ("pdf", Method.MIME_MISMATCH, "png")
    assert found.confidence == 0.7
    assert found.flagged_for_review


def test_a_name_that_strong_magic_contradicts_is_recorded_too() -> None:
    found = _run("notes.txt", None, PNG)

    assert (found.type.name, found.method, found.claimed) == (
        "png",
        Method.NAME_MISMATCH,
        "plaintext",
    )


def test_a_declaration_the_bytes_are_a_kind_of_is_no_lie() -> None:
    word = _zip("word/document.xml")

    declared_zip = _run(None, "application/zip", word)
    declared_word = _run(
        None,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        _zip("a.xml"),
    )

    assert (declared_zip.type.name, declared_zip.method) == ("zip", Method.MIME)
    assert (declared_word.type.name, declared_word.method) == ("docx", Method.MIME)


def test_generic_declarations_say_nothing_and_text_plain_yields_to_the_extension() -> None:
    octets = _run(None, "application/octet-stream", PNG)
    text_py = _run("tool.py", "text/plain; charset=utf-8", b"import os\n")
    text_only = _run(None, "text/plain", b"a: 1\nb: 2\n")

    assert (octets.type.name, octets.method) == ("png", Method.MAGIC)
    assert (text_py.type.name, text_py.method) == ("python", Method.EXTENSION)
    assert (text_only.type.name, text_only.method) == ("plaintext", Method.MIME)


def test_a_generic_binary_name_takes_the_signatures_type_without_a_mismatch() -> None:
    found = _run("blob.bin", None, PNG)

    assert (found.type.name, found.method, found.claimed) == ("png", Method.MAGIC, None)


@pytest.mark.parametrize(
    ("content", "name"),
    [
        pytest.param(PNG, "png", id="png"),
        pytest.param(PDF, "pdf", id="pdf"),
        pytest.param(gzip.compress(b"hello"), "gzip", id="gzip"),
        pytest.param(_zip("word/document.xml", "word/styles.xml"), "docx", id="docx-by-member"),
        pytest.param(_zip("xl/workbook.xml"), "xlsx", id="xlsx-by-member"),
        pytest.param(_zip("notes.txt"), "zip", id="plain-zip"),
        pytest.param(b"RIFF\x24\x00\x00\x00WEBPVP8 ", "webp", id="riff-webp"),
        pytest.param(b"RIFF\x24\x00\x00\x00WAVEfmt ", "wav", id="riff-wave"),
        pytest.param(b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00", "mp4", id="iso-bmff"),
        pytest.param(b"\x7fELF\x02\x01\x01\x00" + bytes(8), "elf", id="elf"),
        pytest.param(b"SQLite format 3\x00" + bytes(20), "sqlite", id="sqlite"),
        pytest.param(
            b"<?xml version='1.0'?>\n<svg xmlns='http://www.w3.org/2000/svg'/>", "svg", id="svg"
        ),
        pytest.param(b"<?xml version='1.0'?>\n<catalog><a/></catalog>", "xml", id="xml"),
        pytest.param(b"\xef\xbb\xbf  <!DOCTYPE html><html></html>", "html", id="html-after-bom"),
        pytest.param(
            b"#!/usr/bin/env -S node --harmony\nconsole.log(1)\n", "javascript", id="env-S"
        ),
        pytest.param(b"#!/bin/bash\necho hi\n", "shell", id="bash"),
        pytest.param(b"#!/usr/bin/python3.11\nprint(1)\n", "python", id="versioned"),
        pytest.param(b'{"a": 1}\n{"a": 2}\n{"a": 3}\n', "json-lines", id="jsonl"),
        pytest.param(b"name: app\nversion: 2\nitems:\n  - a\n", "yaml", id="yaml"),
        pytest.param(
            b"---\ntitle: Note\n---\n# Heading\n\nSee [x](y).\n", "markdown", id="front-matter"
        ),
        pytest.param(b"id,name,score\n1,ann,3\n2,bob,4\n", "csv", id="csv"),
        pytest.param(b"a\tb\n1\t2\n3\t4\n", "tsv", id="tsv"),
        pytest.param(b"# Title\n\n- one\n- two\n", "markdown", id="markdown"),
    ],
)
def test_content_sniffing_names_the_type(content: bytes, name: str) -> None:
    found = _run(None, None, content)

    assert found.type.name == name
    assert found.confidence == 0.7


def test_a_json_document_cut_by_the_prefix_is_still_json() -> None:
    content = b'{"items": [' + b'"x", ' * 5000 + b'"y"]}'

    found = _run(None, None, content)

    assert (found.type.name, found.method) == ("json", Method.STRUCTURE)


def test_bytes_that_match_nothing_are_binary_not_plaintext() -> None:
    noise = bytes(range(256)) * 4

    found = _run(None, None, noise)

    assert (found.type.name, found.type.mime_type) == ("binary", "application/octet-stream")
    assert (found.method, found.confidence) == (Method.FALLBACK, 0.1)


@pytest.mark.parametrize(
    ("content", "binary"),
    [
        pytest.param("naïve café ünïcode".encode(), False, id="utf-8"),
        pytest.param("latin-1 café text".encode("latin-1"), False, id="latin-1"),
        pytest.param("\ufefftext in utf-16".encode("utf-16"), False, id="utf-16-bom"),
        pytest.param(("é" * PREFIX_BYTES).encode()[: PREFIX_BYTES - 1], False, id="cut-mid-char"),
        pytest.param(b"abc\x00def", True, id="nul"),
        pytest.param(bytes([0x01, 0x02, 0x03, 0x80, 0x90]) * 10, True, id="controls"),
    ],
)
def test_binary_or_text(content: bytes, binary: bool) -> None:
    assert looks_binary(content) is binary


def test_a_short_binary_signature_on_text_is_not_taken_for_that_format() -> None:
    found = _run(None, None, b"BM is the signature of a bitmap, but this is prose.")

    assert found.type.name == "plaintext"


def test_a_note_format_is_a_declaration_between_filename_and_mime() -> None:
    by_format = _run(None, None, b"SELECT 1;", format="sql")
    by_alias = _run(None, None, b"x", format="md")
    by_path = _run("vault/Dockerfile", None, b"", format="markdown")

    assert (by_format.type.name, by_format.method, by_format.confidence) == (
        "sql",
        Method.FORMAT,
        0.95,
    )
    assert by_alias.type.name == "markdown"
    assert by_path.type.name == "dockerfile"


def test_a_custom_signature_as_specific_as_a_system_one_wins() -> None:
    custom = parse_type(
        {"name": "our-png", "display_name": "Our PNG", "category": "multimedia",
         "magic": [{"hex": "89504e470d0a1a0a"}]}
    )  # fmt: skip
    index = TypeIndex([custom], system_types())

    assert detect(index, None, None, PNG).type is custom
    assert detect(system_index(), None, None, PNG).type.name == "png"
