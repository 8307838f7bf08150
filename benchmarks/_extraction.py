"""Extraction throughput: the library's adapters beside the format library called directly
on the same file, in the same run (what the adapter's bounds, markdown and metadata cost).

Files: generated into the data folder with the formats' writers (a PDF of ``pages``
pages, a Word document, an Excel workbook), the HTML pages and Python sources found in
the virtualenv's site-packages (real files), and any ``*.pdf``, ``*.docx``, ``*.xlsx``,
``*.html`` already in the data folder (bring your own). Each figure is the best of
``repeat`` runs.
"""

from __future__ import annotations

import io
import os
import platform
import sysconfig
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._common import _git_commit, _versions, print_setup, table
from fortemi.documents.detection import detect
from fortemi.documents.extraction import ExtractionStatus, Limits
from fortemi.documents.extraction.library import LibraryExtractor
from fortemi.documents.registry import system_index
from tests.support.documents import docx_file, pdf_file, xlsx_file

__all__ = ["extraction_throughput"]

_LINE = "The quick brown fox jumps over the lazy dog while the committee reviews line {n}."


def _best(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def _generate(folder: Path, pages: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, Callable[[], bytes]] = {
        "generated.pdf": lambda: pdf_file(
            [[_LINE.format(n=p * 40 + n) for n in range(40)] for p in range(pages)]
        ),
        "generated.docx": lambda: docx_file(
            "Benchmark",
            [_LINE.format(n=n) for n in range(4000)],
            [["k", "v"]] + [[str(n), _LINE.format(n=n)] for n in range(200)],
        ),
        "generated.html": lambda: _article(600).encode(),
        "generated.xlsx": lambda: xlsx_file(
            {
                "Data": [["id", "name", "value", "note"]]
                + [[n, f"item {n}", n * 1.5, _LINE.format(n=n)] for n in range(20_000)]
            }
        ),
    }
    for name, make in made.items():
        if not (folder / name).exists():
            (folder / name).write_bytes(make())


def _article(paragraphs: int) -> str:
    """A long article page with a header, navigation, a sidebar and a footer."""
    links = "".join(f"<li><a href='/s{n}'>Section {n}</a></li>" for n in range(40))
    body = "".join(f"<p>{_LINE.format(n=n)} {_LINE.format(n=n + 1)}</p>" for n in range(paragraphs))
    return (
        "<!doctype html><html><head><title>Benchmark article</title></head><body>"
        f"<header><a href='/'>Home</a></header><nav><ul>{links}</ul></nav>"
        f"<main><article><h1>Benchmark article</h1>{body}</article></main>"
        f"<aside><ul>{links}</ul></aside><footer>Footer text</footer></body></html>"
    )


def _site_files(pattern: str, limit_bytes: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["purelib"])
    found, total = [], 0
    for path in sorted(root.rglob(pattern)):
        if path.is_file() and path.stat().st_size > 0 and total < limit_bytes:
            found.append(path)
            total += path.stat().st_size
    return found


def _direct_pdf(data: bytes) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    chars = 0
    for index in range(len(document)):
        page = document[index]
        textpage = page.get_textpage()
        chars += len(textpage.get_text_bounded())
        textpage.close()
        page.close()
    document.close()
    return chars


def _direct_pypdf(data: bytes) -> int:
    import pypdf

    return sum(len(page.extract_text()) for page in pypdf.PdfReader(io.BytesIO(data)).pages)


def _direct_docx(data: bytes) -> int:
    import docx

    document = docx.Document(io.BytesIO(data))
    chars = sum(len(p.text) for p in document.paragraphs)
    cells = (cell for t in document.tables for row in t.rows for cell in row.cells)
    return chars + sum(len(cell.text) for cell in cells)


def _direct_xlsx(data: bytes) -> int:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    cells = sum(len(row) for sheet in book.worksheets for row in sheet.iter_rows(values_only=True))
    book.close()
    return cells


def _direct_html(data: bytes) -> int:
    import trafilatura

    return len(trafilatura.extract(data.decode("utf-8", "replace"), output_format="markdown") or "")


def extraction_throughput(folder: Path, pages: int, repeat: int) -> None:
    print_setup(
        "documents: extraction throughput",
        [
            ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
            ("commit", _git_commit()),
            ("python", f"{platform.python_implementation()} {platform.python_version()}"),
            ("libraries", _versions("pypdfium2", "pypdf", "python-docx", "openpyxl",
                                    "trafilatura")),
            ("cpu", f"{os.cpu_count()} logical cores (shared)"),
        ],
    )  # fmt: skip
    _generate(folder, pages)
    extractor = LibraryExtractor()
    index = system_index()
    limits = Limits(max_pdf_pages=100_000, time_budget_seconds=3600)

    def library(paths: list[Path]) -> Callable[[], object]:
        loaded = [(p.name, p.read_bytes()) for p in paths]
        detected = [(name, data, detect(index, name, None, data)) for name, data in loaded]

        def work() -> None:
            for name, data, detection in detected:
                found = extractor.extract(data, filename=name, detection=detection, limits=limits)
                if found.status is not ExtractionStatus.DONE:
                    raise RuntimeError(f"{name}: {found.status.value} {found.reason}")

        return work

    def direct(paths: list[Path], read: Callable[[bytes], int]) -> Callable[[], object]:
        loaded = [p.read_bytes() for p in paths]
        return lambda: [read(data) for data in loaded]

    pdfs = sorted(folder.glob("*.pdf"))
    docxs = sorted(folder.glob("*.docx"))
    xlsxs = sorted(folder.glob("*.xlsx"))
    htmls = sorted(folder.glob("*.html")) + _site_files("*.html", 4_000_000)
    code = _site_files("*.py", 8_000_000)
    rows: list[tuple[str, str, str, str, str]] = []

    def add(label: str, paths: list[Path], baseline: str, read: Callable[[bytes], int],
            unit: str, amount: float) -> None:  # fmt: skip
        ours = _best(library(paths), repeat)
        theirs = _best(direct(paths, read), repeat)
        rows.append((label, f"{len(paths)} files, {_mb(paths):.2f} MB",
                     f"{amount / ours:,.1f} {unit}", f"{amount / theirs:,.1f} {unit}",
                     f"{baseline} ({ours / theirs:.2f}x)"))  # fmt: skip

    page_count = sum(_pages(p) for p in pdfs)
    add("PDF", pdfs, "pypdfium2 direct", _direct_pdf, "pages/s", page_count)
    pypdf_time = _best(direct(pdfs, _direct_pypdf), repeat)
    rows.append(("PDF (alternative)", f"{len(pdfs)} files", "-",
                 f"{page_count / pypdf_time:,.1f} pages/s", "pypdf direct"))  # fmt: skip
    add("DOCX", docxs, "python-docx paragraphs", _direct_docx, "MB/s", _mb(docxs))
    add("XLSX", xlsxs, "openpyxl read-only values", _direct_xlsx, "MB/s", _mb(xlsxs))
    add("HTML", htmls, "trafilatura.extract", _direct_html, "MB/s", _mb(htmls))
    add("code (.py)", code, "bytes.decode", lambda d: len(d.decode("utf-8", "replace")),
        "MB/s", _mb(code))  # fmt: skip
    print(f"\n## extraction throughput (best of {repeat}; files in {folder})")
    headers = ["format", "set", "library", "baseline", "baseline (library time / its time)"]
    print(table(headers, rows, "llrrl"))


def _mb(paths: list[Path]) -> float:
    return sum(p.stat().st_size for p in paths) / 1_000_000


def _pages(path: Path) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(path.read_bytes())
    try:
        return len(document)
    finally:
        document.close()
