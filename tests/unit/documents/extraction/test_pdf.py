"""PDF: text page by page, bounded by pages and time; corrupt, truncated and scanned
files answered with reasons."""

from __future__ import annotations

import itertools

from fortemi.documents.detection import detect
from fortemi.documents.extraction import ExtractionStatus, Limits
from fortemi.documents.extraction.library import LibraryExtractor
from fortemi.documents.registry import system_index
from tests.support.documents import pdf_file, scanned_pdf_file
from tests.unit.documents.extraction._helpers import extract


def test_pdf_text_is_read_page_by_page_in_order_with_its_metadata() -> None:
    data = pdf_file([["first page", "its second line"], ["second page"]], title="Quarterly")

    found = extract(data, "report.pdf")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "pdf")
    assert found.text == "first page\nits second line\n\nsecond page\n\n"
    assert (found.metadata["pages"], found.metadata["pages_read"]) == (2, 2)
    assert found.metadata["title"] == "Quarterly"
    assert found.metadata["truncated"] is False


def test_pages_past_the_page_limit_are_not_read_and_the_text_says_truncated() -> None:
    data = pdf_file([[f"page {n}"] for n in range(1, 8)])

    found = extract(data, "long.pdf", limits=Limits(max_pdf_pages=3, pdf_page_batch=2))

    assert found.text.split() == ["page", "1", "page", "2", "page", "3"]
    assert (found.metadata["pages"], found.metadata["pages_read"]) == (7, 3)
    assert found.metadata["truncated"] is True


def test_the_time_budget_is_checked_between_page_batches() -> None:
    ticks = itertools.count(0.0, 1.0)
    data = pdf_file([[f"page {n}"] for n in range(10)])
    detection = detect(system_index(), "slow.pdf", None, data)

    found = LibraryExtractor(clock=lambda: next(ticks)).extract(
        data, filename="slow.pdf", detection=detection,
        limits=Limits(time_budget_seconds=2.5, pdf_page_batch=2),
    )  # fmt: skip

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("time_limit: ")
    assert "page" in found.reason


def test_a_corrupt_pdf_fails_with_corrupt_pdf() -> None:
    found = extract(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage", "broken.pdf")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("corrupt_pdf: ")


def test_a_pdf_cut_in_half_fails_or_reads_what_is_left_without_raising() -> None:
    data = pdf_file([[f"page {n}"] for n in range(20)])

    found = extract(data[: len(data) // 2], "cut.pdf")

    assert found.status in (ExtractionStatus.FAILED, ExtractionStatus.DONE)
    if found.status is ExtractionStatus.FAILED:
        assert found.reason is not None
        assert found.reason.startswith("corrupt_pdf: ")


def test_a_scanned_pdf_without_an_ocr_model_is_skipped_saying_so() -> None:
    found = extract(scanned_pdf_file(2), "scan.pdf")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("ocr_not_configured: ")
    assert found.metadata["pages"] == 2


def test_a_scanned_page_is_read_by_the_ocr_model_when_configured() -> None:
    reader = _Reader("Handwritten invoice 42")
    data = scanned_pdf_file(1)

    found = extract(data, "scan.pdf", extractor=_with_ocr(reader))

    assert found.status is ExtractionStatus.DONE
    assert found.text.strip() == "Handwritten invoice 42"
    assert found.metadata["ocr_pages"] == 1
    assert reader.images[0].startswith(b"\x89PNG")


class _Reader:
    """An in-memory image reader (the Ollama one is tested against its double)."""

    model = "ocr-test"

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.images: list[bytes] = []

    def read_image(self, image: bytes, prompt: str) -> str:
        self.images.append(image)
        return self.answer


def _with_ocr(reader: _Reader) -> LibraryExtractor:
    from fortemi.documents.extraction.library import default_adapters

    return LibraryExtractor(default_adapters(ocr=reader))


def test_a_password_protected_pdf_fails_as_encrypted() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-secret", user_password="user-secret")
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.cell(0, 6, "confidential")

    found = extract(bytes(pdf.output()), "locked.pdf")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("encrypted_pdf: ")
