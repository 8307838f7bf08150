"""Office documents: Word (python-docx), PowerPoint (python-pptx), Excel (openpyxl),
OpenDocument text, presentations and spreadsheets (odfpy) and RTF (striprtf).

Headings become markdown headings and tables markdown tables, so the semantic chunker
sees the document's structure. The ZIP of an OOXML or OpenDocument file passes the
archive limits first (:func:`~fortemi.documents.extraction.archive.check_zip`): a
document is a ZIP, and a bomb dressed as one is refused before a library inflates it.
The legacy binary formats (``.doc``, ``.xls``, ``.ppt``) have no maintained pure-Python
reader and are ``SKIPPED``.
"""

from __future__ import annotations

import io
import re
from typing import Any

from fortemi.documents.extraction._run import (
    Read,
    Run,
    TextSink,
    Unavailable,
    Unreadable,
    corrupt,
)
from fortemi.documents.extraction.archive import check_zip
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.odf import read_odf
from fortemi.documents.extraction.sheets import read_xlsx
from fortemi.documents.extraction.tables import markdown_table
from fortemi.documents.extraction.text import read_text
from fortemi.documents.models import Detection

__all__ = ["OfficeAdapter"]

_HEADING = re.compile(r"^Heading (\d)$")
_OOXML = ("docx", "pptx", "xlsx")
_ODF = ("odt", "odp", "ods")


class OfficeAdapter:
    name = "office"

    def health(self) -> Health:
        return Health(self.name, True, "python-docx, python-pptx, openpyxl, odfpy, striprtf")

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        kind = detection.type.name
        if kind == "rtf":
            return _rtf(data, detection, run)
        if kind not in _OOXML and kind not in _ODF:
            raise Unavailable(
                "unsupported_format",
                f"no reader for {detection.type.display_name} files ships with Fortemi; "
                "save it in the current format (.docx, .xlsx, .pptx, .odt)",
            )
        try:
            check_zip(data, run.limits).close()
        except Unreadable as exc:
            if exc.code != "corrupt_archive":  # a bomb stays a bomb
                raise
            shown = detection.type.display_name
            raise Unreadable("corrupt_document", f"{shown}: {exc.detail}") from exc
        sink = TextSink(run.limits.max_text_bytes)
        if kind == "docx":
            metadata = _docx(data, sink, run)
        elif kind == "pptx":
            metadata = _pptx(data, sink, run)
        elif kind == "xlsx":
            metadata = read_xlsx(data, sink, run)
        else:
            metadata = read_odf(data, kind, sink, run)
        return Read(sink.text(), metadata, truncated=sink.truncated)


def _docx(data: bytes, sink: TextSink, run: Run) -> dict[str, Any]:
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(document.iter_inner_content())
    except Exception as exc:  # python-docx raises zip, XML and key errors alike
        raise corrupt("Word", exc) from exc
    # Paragraph.style looks the style up in styles.xml on every call (quadratic on long
    # documents); the names are read once and each paragraph's style id looked up here.
    names = {style.style_id: style.name for style in document.styles}
    paragraphs = tables = 0
    for number, block in enumerate(blocks):
        if number % 200 == 0:
            run.check(f"block {number + 1}")
        if isinstance(block, Table):
            tables += 1
            rows = [[cell.text for cell in row.cells] for row in block.rows]
            sink.write(markdown_table(rows) + "\n\n")
            continue
        text = block.text.strip()
        if not text:
            continue
        paragraphs += 1
        style = names.get(block._p.style or "", "")  # the paragraph's w:pStyle id
        heading = _HEADING.match(style or "")
        if heading:
            text = "#" * int(heading[1]) + " " + text
        elif style == "Title":
            text = "# " + text
        if not sink.write(text + "\n\n"):
            break
    core = document.core_properties
    return _clean({"paragraphs": paragraphs, "tables": tables, "title": core.title,
                   "author": core.author, "created": core.created})  # fmt: skip


def _pptx(data: bytes, sink: TextSink, run: Run) -> dict[str, Any]:
    import pptx

    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        slides = list(presentation.slides)
    except Exception as exc:  # python-pptx raises zip, XML and key errors alike
        raise corrupt("PowerPoint", exc) from exc
    for number, slide in enumerate(slides, 1):
        run.check(f"slide {number}")
        parts = [f"## Slide {number}"]
        for shape in slide.shapes:
            if getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
                parts.append(shape.text_frame.text.strip())
            if getattr(shape, "has_table", False):
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                parts.append(markdown_table(rows))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                parts.append("Notes: " + notes.text.strip())
        if not sink.write("\n\n".join(parts) + "\n\n"):
            break
    core = presentation.core_properties
    return _clean({"slides": len(slides), "title": core.title, "author": core.author,
                   "created": core.created})  # fmt: skip


def _rtf(data: bytes, detection: Detection, run: Run) -> Read:
    from striprtf.striprtf import rtf_to_text

    source, truncated, _ = read_text(data, detection, run)
    if not source.lstrip().startswith("{\\rtf"):
        raise Unreadable("corrupt_document", "not RTF: it does not start with {\\rtf")
    text = str(rtf_to_text(source, errors="replace"))  # type: ignore[no-untyped-call]
    return Read(text.strip() + "\n", {"format": "rtf"}, truncated=truncated)


def _clean(metadata: dict[str, Any]) -> dict[str, Any]:
    """JSON-ready metadata: no empty values, dates as ISO 8601."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if value in (None, ""):
            continue
        out[key] = value.isoformat() if hasattr(value, "isoformat") else value
    return out
