"""Rows as markdown tables: how spreadsheets and document tables become searchable text
that still reads as a table (and that the semantic chunker keeps whole where it can)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

__all__ = ["MAX_COLUMNS", "cell_text", "markdown_row", "markdown_table", "separator", "trimmed"]

MAX_COLUMNS = 256  # columns kept per row; a sheet wider than this is cut on the right


def cell_text(value: object) -> str:
    """A cell's value as text: empty for nothing, ISO 8601 for dates, integral floats
    without ``.0``."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_row(cells: Sequence[str], width: int) -> str:
    padded = [*cells[:width], *[""] * (width - len(cells))]
    return "| " + " | ".join(_escaped(c.strip()) for c in padded) + " |"


def separator(width: int) -> str:
    return "|" + "---|" * width


def trimmed(cells: Iterable[object]) -> list[str]:
    """The row's texts without its trailing empty cells (at most MAX_COLUMNS)."""
    texts = [cell_text(c) for _, c in zip(range(MAX_COLUMNS), cells, strict=False)]
    while texts and not texts[-1].strip():
        texts.pop()
    return texts


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` (the first is the header) as a markdown table; empty for no rows."""
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = [markdown_row(rows[0], width), separator(width)]
    lines.extend(markdown_row(r, width) for r in rows[1:])
    return "\n".join(lines)
