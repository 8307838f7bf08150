"""Archives: listings and member text within limits; bombs, traversal paths, nesting and
corrupt archives refused or contained, all in memory."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from fortemi.documents.extraction import ExtractionStatus, Limits
from tests.support.documents import docx_file, png_file, tar_file, zip_file
from tests.unit.documents.extraction._helpers import extract


def test_a_zip_lists_its_members_and_extracts_their_text_by_type() -> None:
    data = zip_file({"notes.txt": b"alpha notes", "conf/app.json": b'{"k": 1}',
                     "report.docx": docx_file("Inner", ["inner paragraph"])})  # fmt: skip

    found = extract(data, "bundle.zip")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "archive")
    assert [m["name"] for m in found.metadata["listing"]] == [
        "notes.txt", "conf/app.json", "report.docx"]  # fmt: skip
    assert "## notes.txt\n\nalpha notes" in found.text
    assert "## report.docx\n\n# Inner\n\ninner paragraph" in found.text
    assert found.metadata["members"] == 3


def test_a_zip_bomb_is_refused_from_its_declared_sizes() -> None:
    found = extract(zip_file({"zeros.bin": bytes(5_000_000)}), "bomb.zip")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("archive_bomb: ")


def test_an_archive_over_the_total_size_is_refused() -> None:
    data = zip_file({"a.txt": b"a" * 4000, "b.txt": b"b" * 4000})

    found = extract(data, "big.zip", limits=Limits(max_archive_total_bytes=5000))

    assert found.reason is not None
    assert found.reason.startswith("archive_bomb: ")


def test_an_archive_with_too_many_members_is_refused() -> None:
    data = zip_file({f"f{n}.txt": b"x" for n in range(20)})

    found = extract(data, "many.zip", limits=Limits(max_archive_members=10))

    assert found.reason is not None
    assert found.reason.startswith("too_many_members: ")


def test_a_gzip_bomb_is_refused_while_decompressing(tmp_path: Path) -> None:
    data = gzip.compress(bytes(3_000_000))

    found = extract(data, "zeros.gz", limits=Limits(max_archive_total_bytes=1_000_000))

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("archive_bomb: ")


@pytest.mark.parametrize(
    "evil", ["../../escaped.txt", "/absolute-fortemi-test.txt", "a/../../up.txt"]
)
def test_traversal_member_paths_are_listed_as_unsafe_and_never_touch_the_disk(
    evil: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    data = zip_file({"fine.txt": b"fine text", evil: b"SECRET-PAYLOAD"})

    found = extract(data, "evil.zip")

    assert found.status is ExtractionStatus.DONE
    entry = next(m for m in found.metadata["listing"] if m["name"] == evil)
    assert entry["skipped"] == "unsafe_path"
    assert "SECRET-PAYLOAD" not in found.text
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b"]
    assert not Path("/absolute-fortemi-test.txt").exists()


def test_a_gzipped_tar_is_listed_and_its_text_members_read() -> None:
    found = extract(tar_file({"docs/readme.md": b"# Read me", "data.csv": b"a,b\n1,2\n"}),
                    "release.tar.gz")  # fmt: skip

    assert found.status is ExtractionStatus.DONE
    assert "## docs/readme.md\n\n# Read me" in found.text
    assert [m["name"] for m in found.metadata["listing"]] == ["docs/readme.md", "data.csv"]


def test_a_single_gzipped_file_is_read_as_its_content() -> None:
    found = extract(gzip.compress(b"server log line\n"), "server.log.gz")

    assert found.status is ExtractionStatus.DONE
    assert "server log line" in found.text


def test_nesting_deeper_than_the_limit_is_listed_not_read() -> None:
    innermost = zip_file({"deep.txt": b"deep secret"})
    middle = zip_file({"inner.zip": innermost})
    data = zip_file({"middle.zip": middle})

    found = extract(data, "nested.zip", limits=Limits(max_archive_depth=2))

    assert found.status is ExtractionStatus.DONE
    assert "deep secret" not in found.text
    assert "skipped" not in found.metadata["listing"][0]


def test_a_member_at_the_depth_limit_is_read() -> None:
    data = zip_file({"inner.zip": zip_file({"deep.txt": b"deep text"})})

    found = extract(data, "nested.zip", limits=Limits(max_archive_depth=2))

    assert "deep text" in found.text


def test_a_corrupt_zip_fails_as_corrupt_archive() -> None:
    data = zip_file({"a.txt": b"x" * 100})

    found = extract(data[:40], "cut.zip")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("corrupt_archive: ")


def test_a_polyglot_is_extracted_as_what_its_bytes_are_and_the_claim_is_kept() -> None:
    # ZIP bytes named and declared as a PDF: the bytes decide, the claim is recorded.
    found = extract(zip_file({"a.txt": b"hidden text"}), "invoice.pdf", "application/pdf")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "archive")
    assert found.metadata["claimed_type"] == "pdf"


def test_an_image_with_a_zip_appended_is_an_image_not_an_archive() -> None:
    data = png_file() + zip_file({"payload.txt": b"PAYLOAD"})

    found = extract(data, "photo.png")

    assert found.adapter == "image"
    assert "PAYLOAD" not in found.text


def test_a_compressed_tar_that_expands_past_the_limit_is_refused_before_it_is_walked() -> None:
    data = tar_file({"zeros.bin": bytes(3_000_000)})

    found = extract(data, "zeros.tar.gz", limits=Limits(max_archive_total_bytes=1_000_000))

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("archive_bomb: ")


def test_an_archive_format_without_a_reader_is_skipped_as_unsupported() -> None:
    found = extract(bytes.fromhex("377abcaf271c") + bytes(100), "backup.7z")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("unsupported_format: ")
