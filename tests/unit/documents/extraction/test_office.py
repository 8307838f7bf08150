"""Office documents: headings and tables as markdown, sheets as markdown tables; truncated
and bomb-laden files refused; legacy binary formats skipped."""

from __future__ import annotations

from fortemi.documents.extraction import ExtractionStatus
from tests.support.documents import (
    docx_file,
    ods_file,
    odt_file,
    pptx_file,
    xlsx_file,
    zip_file,
)
from tests.unit.documents.extraction._helpers import extract


def test_a_word_document_keeps_its_headings_and_tables_as_markdown() -> None:
    data = docx_file("Report", ["First paragraph.", "Second."], [["name", "role"], ["ada", "a|b"]])

    found = extract(data, "report.docx")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "office")
    assert found.text.startswith("# Report\n\nFirst paragraph.\n\nSecond.\n\n")
    assert "| name | role |\n|---|---|\n| ada | a\\|b |" in found.text
    assert "## Second section" in found.text
    assert (found.metadata["title"], found.metadata["author"]) == ("Report", "Ada Lovelace")
    assert found.metadata["tables"] == 1


def test_a_truncated_word_document_fails_as_corrupt() -> None:
    data = docx_file("Report", ["text"])

    found = extract(data[: len(data) // 2], "cut.docx")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("corrupt_document: ")


def test_a_zip_that_claims_to_be_a_word_document_fails_as_corrupt() -> None:
    found = extract(zip_file({"hello.txt": b"not a document"}), "fake.docx")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("corrupt_document: ")


def test_a_zip_bomb_dressed_as_a_word_document_is_refused_before_parsing() -> None:
    data = zip_file({"word/document.xml": b"<" + b"a" * 5_000_000})

    found = extract(data, "bomb.docx")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("archive_bomb: ")


def test_slides_are_read_in_order_with_their_notes() -> None:
    data = pptx_file([("Intro", "Bullet one\nBullet two", "speaker notes"), ("Plan", "Ship", "")])

    found = extract(data, "deck.pptx")

    assert found.text == (
        "## Slide 1\n\nIntro\n\nBullet one\nBullet two\n\nNotes: speaker notes\n\n"
        "## Slide 2\n\nPlan\n\nShip\n\n"
    )
    assert found.metadata["slides"] == 2


def test_an_excel_workbook_becomes_one_markdown_table_per_sheet() -> None:
    data = xlsx_file({"People": [["name", "age"], ["ada", 36], ["alan", 41.0]],
                      "Cities": [["city"], ["Paris"]]})  # fmt: skip

    found = extract(data, "book.xlsx")

    assert found.text == (
        "## People\n\n| name | age |\n|---|---|\n| ada | 36 |\n| alan | 41 |\n\n"
        "## Cities\n\n| city |\n|---|\n| Paris |\n\n"
    )
    assert found.metadata["sheets"] == [
        {"name": "People", "rows": 2, "columns": 2},
        {"name": "Cities", "rows": 1, "columns": 1},
    ]


def test_an_opendocument_spreadsheet_becomes_markdown_tables() -> None:
    found = extract(ods_file({"Stock": [["item", "qty"], ["bolts", "12"]]}), "stock.ods")

    assert found.text == "## Stock\n\n| item | qty |\n|---|---|\n| bolts | 12 |\n\n"


def test_an_opendocument_text_keeps_its_headings() -> None:
    found = extract(odt_file("Minutes", ["We met.", "We agreed."]), "minutes.odt")

    assert found.text == "# Minutes\n\nWe met.\n\nWe agreed.\n\n"
    assert (found.metadata["headings"], found.metadata["paragraphs"]) == (1, 2)


def test_rtf_control_words_are_stripped() -> None:
    found = extract(b"{\\rtf1\\ansi Hello {\\b bold} world\\par}", "note.rtf")

    assert (found.status, found.text) == (ExtractionStatus.DONE, "Hello bold world\n")


def test_a_legacy_binary_office_file_is_skipped_as_unsupported() -> None:
    found = extract(bytes.fromhex("d0cf11e0a1b11ae1") + bytes(600), "old.doc")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("unsupported_format: ")
