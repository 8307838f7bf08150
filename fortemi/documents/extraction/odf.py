"""OpenDocument text, presentations and spreadsheets, through odfpy.

Text and presentations: every heading (as a markdown heading) and paragraph in document
order. Spreadsheets: one markdown table per sheet. A row or cell that ODF marks repeated
(``number-columns-repeated``: an empty tail of a sheet is often a million cells) is
expanded only while it holds text, up to MAX_COLUMNS columns.
"""

from __future__ import annotations

import io
from typing import Any

from fortemi.documents.extraction._run import Run, TextSink, Unreadable, corrupt
from fortemi.documents.extraction.sheets import SheetWriter
from fortemi.documents.extraction.tables import MAX_COLUMNS

__all__ = ["read_odf"]

_TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE_NS = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_MAX_ROW_REPEAT = 100  # a repeated non-empty row is written at most this many times


def read_odf(data: bytes, kind: str, sink: TextSink, run: Run) -> dict[str, Any]:
    from odf.opendocument import load

    try:
        document = load(io.BytesIO(data))
    except Exception as exc:  # odfpy raises zip, XML, key and attribute errors alike
        raise corrupt("OpenDocument", exc) from exc
    try:
        if kind == "ods":
            return _spreadsheet(document, sink, run)
        return _text(document.body, sink, run)
    except Unreadable:
        raise
    except Exception as exc:  # a damaged content part, found while walking it
        raise corrupt("OpenDocument", exc) from exc


def _text(body: Any, sink: TextSink, run: Run) -> dict[str, Any]:
    from odf import teletype

    headings = paragraphs = 0
    stack = list(reversed(body.childNodes))
    while stack:  # document order, without recursion (tables nest paragraphs deeply)
        node = stack.pop()
        if node.nodeType != node.ELEMENT_NODE:
            continue
        namespace, local = node.qname
        if namespace == _TEXT_NS and local in ("h", "p"):
            if (paragraphs + headings) % 500 == 0:
                run.check(f"paragraph {paragraphs + headings + 1}")
            text = teletype.extractText(node).strip()
            if not text:
                continue
            if local == "h":
                headings += 1
                level = int(node.getAttribute("outlinelevel") or 1)
                text = "#" * min(max(level, 1), 6) + " " + text
            else:
                paragraphs += 1
            if not sink.write(text + "\n\n"):
                break
            continue
        stack.extend(reversed(node.childNodes))
    return {"headings": headings, "paragraphs": paragraphs}


def _spreadsheet(document: Any, sink: TextSink, run: Run) -> dict[str, Any]:
    from odf import table, teletype

    sheets: list[dict[str, Any]] = []
    for sheet in document.spreadsheet.getElementsByType(table.Table):
        writer = SheetWriter(sheet.getAttribute("name") or f"Sheet {len(sheets) + 1}", sink)
        for number, row in enumerate(sheet.getElementsByType(table.TableRow)):
            if number % 1000 == 0:
                run.check(f"sheet row {number + 1}")
            cells: list[str] = []
            for cell in row.childNodes:
                if cell.qname[0] != _TABLE_NS or len(cells) >= MAX_COLUMNS:
                    continue
                text = teletype.extractText(cell)
                repeat = int(cell.getAttribute("numbercolumnsrepeated") or 1)
                cells.extend([text] * min(repeat, MAX_COLUMNS - len(cells)))
            while cells and not cells[-1].strip():
                cells.pop()
            repeat = min(int(row.getAttribute("numberrowsrepeated") or 1), _MAX_ROW_REPEAT)
            for _ in range(repeat if cells else 0):
                writer.add(cells)
            if sink.full:
                break
        sheets.append(writer.close())
        if sink.full:
            break
    return {"sheets": sheets}
