"""Excel workbooks (openpyxl, read-only streaming) as one markdown table per sheet."""

from __future__ import annotations

import io
from typing import Any

from fortemi.documents.extraction._run import Run, TextSink, Unreadable, corrupt
from fortemi.documents.extraction.tables import markdown_row, separator, trimmed

__all__ = ["SheetWriter", "read_xlsx"]

_ROWS_PER_CHECK = 1000


class SheetWriter:
    """Writes one sheet's rows to the sink as a markdown table, the first non-empty row as
    its header; counts rows and columns."""

    def __init__(self, name: str, sink: TextSink) -> None:
        self.name = name
        self.rows = 0
        self.columns = 0
        self._sink = sink
        self._width = 0

    def add(self, cells: list[str]) -> bool:
        """Add a row (trailing empties already trimmed); False when the text is full."""
        if not any(c.strip() for c in cells):
            return True
        if self.rows == 0:
            self._width = len(cells)
            header = f"## {self.name}\n\n{markdown_row(cells, self._width)}\n"
            self._sink.write(header + separator(self._width) + "\n")
        else:
            self._sink.write(markdown_row(cells, max(self._width, len(cells))) + "\n")
        self.rows += 1
        self.columns = max(self.columns, len(cells))
        return not self._sink.full

    def close(self) -> dict[str, Any]:
        if self.rows:
            self._sink.write("\n")
        # The header row is not counted among the rows.
        return {"name": self.name, "rows": max(self.rows - 1, 0), "columns": self.columns}


def read_xlsx(data: bytes, sink: TextSink, run: Run) -> dict[str, Any]:
    import openpyxl

    try:
        # read_only streams rows from the ZIP; data_only gives cached values, not formulas.
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zip, XML, key and value errors alike
        raise corrupt("Excel", exc) from exc
    sheets: list[dict[str, Any]] = []
    try:
        for sheet in book.worksheets:
            writer = SheetWriter(sheet.title, sink)
            for number, row in enumerate(sheet.iter_rows(values_only=True)):
                if number % _ROWS_PER_CHECK == 0:
                    run.check(f"sheet {sheet.title!r} row {number + 1}")
                if not writer.add(trimmed(row)):
                    break
            sheets.append(writer.close())
            if sink.full:
                break
    except Unreadable:
        raise
    except Exception as exc:  # a damaged sheet part, found while streaming its rows
        raise corrupt("Excel", exc) from exc
    finally:
        book.close()
    return {"sheets": sheets}
