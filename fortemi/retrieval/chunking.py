"""Cutting a note into chunks small enough for a sentence-embedding model.

The model (all-MiniLM-L6-v2) reads at most 256 word pieces, about 1,000 characters of
English, so a note becomes chunks of at most ``size`` characters. A chunk is an exact slice
of the note (``note[start:end]``), stripped of surrounding whitespace, never rewritten; the
caller adds the title when it embeds one.

The note is read as *units*, coarsest first, by format:

* **markdown** -- every ATX heading starts a new chunk and travels with the content below
  it (headings with nothing between them travel together). Within a section the units are
  paragraphs, fenced code blocks, and lists (items separated by blank lines, with their
  indented continuation blocks, form one unit).
* **code** (:data:`CODE_FORMATS`) -- top-level statement groups: a block that starts at a
  definition (``def``, ``class``, ``function``, ``func``, ``fn``, ..., with the decorators
  and comments directly above it) or at any other unindented line, plus the indented blocks
  that follow it. Blocks are separated by blank lines.
* **text** (anything else) -- as markdown without headings or fences.

Units are packed greedily: a unit joins the current chunk while the chunk still fits in
``size``, otherwise it starts the next one, so a unit that fits is never cut and packed
chunks never overlap. A unit longer than ``size`` is opened into its parts (a list into its
blocks and items, a fence or a statement group into code blocks) and those are packed the
same way. A unit with no parts is *split*: each piece ends at the last sentence end (prose)
or line end (code, tables) that uses at least half the room left, else at the last word
end, else -- only for a word longer than ``size`` -- at ``size`` characters, moved back so
it does not separate a combining mark or emoji joiner from its base (an approximation of
grapheme boundaries). Only pieces of a split unit overlap: each piece after the first
starts up to ``overlap`` characters before the previous piece ended -- at a sentence start
(prose) or line start (code) in that window, else a word start, or exactly there after a
hard cut -- and without overlap when there is no such start or when the overlap would leave
no room for the next word.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from itertools import pairwise
from typing import NamedTuple

__all__ = ["CODE_FORMATS", "MARKDOWN_FORMATS", "MIN_SIZE", "Chunk", "chunk_text"]

MIN_SIZE = 100
MARKDOWN_FORMATS = frozenset({"markdown", "md", "gfm", "commonmark"})
CODE_FORMATS = frozenset(
    {
        "code", "python", "py", "javascript", "js", "jsx", "typescript", "ts", "tsx", "go",
        "golang", "rust", "rs", "java", "kotlin", "kt", "scala", "swift", "c", "h", "cpp",
        "c++", "cc", "hpp", "csharp", "cs", "sql", "sh", "bash", "zsh", "shell", "ruby", "rb",
        "php", "lua", "perl", "r",
    }
)  # fmt: skip

_ZWJ = "\u200d"
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# Fences count at any indentation, so that code in a list item stays whole.
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?=\s|$)")
_TABLE_OR_INDENTED_CODE = re.compile(r"[ \t]*\||    |\t")
_MAYBE_MARKUP = re.compile(r"[ \t]*[#`~]")
_DEFINITION = re.compile(
    r"(?:export[ \t]+(?:default[ \t]+)?)?"
    r"(?:(?:pub(?:\([^)]*\))?|public|private|protected|internal|static|final|abstract|sealed"
    r"|async|unsafe|extern|inline|override|open|data)[ \t]+)*"
    r"(?:def|class|function|func|fn|interface|struct|enum|trait|impl|module)\b"
)
_PRELUDE = re.compile(r"@|#|//|/\*|[ \t]*\*|--")  # decorators, attributes, comments
_CONTINUATION = re.compile(r"[ \t]|[}\])]|(?:end|else|elif|except|finally|catch)\b")
# A sentence ends at . ! ? (and closing quotes or brackets) before a line break or before a
# word that is not lower-case; CJK full stops end one without any space.
_CLOSERS = r"[\"')\]\u00bb\u201d\u2019]*"  # closing quotes and brackets
_OPENERS = r"[\"'(\[\u00ab\u201c\u2018]*"
_SENTENCE_END = re.compile(
    rf"[.!?]+{_CLOSERS}(?=[^\S\n]*\n|\s+{_OPENERS}(\w))"
    r"|[\u3002\uff01\uff1f]+[\u300d\u300f\u201d\u2019\uff09]*"  # CJK full stops, closers
)
_LINE_BREAK = re.compile(r"\r?\n|\r")
_SPACE = re.compile(r"\s+")
_WORD_START = re.compile(r"(?<!\S)\S")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice of a note: ``text == note[start:end]``, stripped, in document order."""

    ordinal: int
    text: str
    start: int
    end: int
    heading: str | None  # markdown heading path above the chunk, e.g. "Setup > Install"


def chunk_text(
    text: str, *, format: str = "markdown", size: int = 1200, overlap: int = 150
) -> list[Chunk]:
    """The chunks of ``text`` read as ``format``: none for blank text, each ``<= size``.

    Every non-whitespace character is in at least one chunk; chunks are ordered by start
    and by end. Raises :class:`ValueError` unless ``size >= MIN_SIZE`` and
    ``0 <= overlap < size / 2`` (the bound that guarantees each piece of a split advances).
    """
    if size < MIN_SIZE:
        raise ValueError(f"chunk size must be at least {MIN_SIZE} characters, got {size}")
    if overlap < 0 or overlap * 2 >= size:
        raise ValueError(
            f"chunk overlap must be at least 0 and less than half the size ({size}), got {overlap}"
        )
    if not text or text.isspace():
        return []
    kind = format.strip().lower()
    if kind in CODE_FORMATS:
        sections = [_Section(None, _code_units(text, 0, len(text)))]
    else:
        sections = _Reader(text, markdown=kind in MARKDOWN_FORMATS).read()
    chunks: list[Chunk] = []
    for section in sections:
        for start, end in _pack(text, section.units, size, overlap):
            chunks.append(Chunk(len(chunks), text[start:end], start, end, section.heading))
    return chunks


class _Kind(Enum):
    PROSE = "prose"  # split at sentences, lines, words
    LINES = "lines"  # split at lines, words
    LIST = "list"  # opens into items
    FENCE = "fence"  # opens into the code units of its body
    GROUP = "group"  # opens into its parts (a loose list, a statement group)


_PROSE_KINDS = frozenset({_Kind.PROSE, _Kind.LIST})


class _Unit(NamedTuple):
    start: int
    end: int
    kind: _Kind
    body: int  # where its own text starts; before it, a heading carried along
    parts: tuple[_Unit, ...] = ()


class _Section(NamedTuple):
    heading: str | None
    units: list[_Unit]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _skip_space(text: str, index: int, end: int) -> int:
    while index < end and text[index].isspace():
        index += 1
    return index


def _leaf(text: str, start: int, end: int, kind: _Kind) -> _Unit:
    start, end = _strip(text, start, end)
    return _Unit(start, end, kind, start)


def _is_fence_line(line: str) -> bool:
    mark = line.strip()
    return len(mark) >= 3 and mark[0] in "`~" and not mark.strip(mark[0])


class _Reader:
    """One pass over the lines of a markdown or plain-text note, collecting its sections."""

    def __init__(self, text: str, *, markdown: bool) -> None:
        self.text = text
        self.markdown = markdown
        self.sections: list[_Section] = []
        self.path: list[tuple[int, str]] = []  # (level, title) of the open headings
        self.heading: str | None = None
        self.lead: tuple[int, int] | None = None  # the current section's heading lines
        self.blocks: list[_Unit] = []
        self.paragraph = -1  # start of the open paragraph, if any
        self.paragraph_end = 0
        self.fence: tuple[str, int, int] | None = None  # char, length, start

    def read(self) -> list[_Section]:
        offset = 0
        for line in self.text.splitlines(keepends=True):
            start = offset
            offset += len(line)
            if self.fence is not None:
                self._in_fence(self.fence, line, offset)
            elif line.isspace():
                self._end_paragraph()
            elif self.markdown and _MAYBE_MARKUP.match(line) and self._markup(line, start, offset):
                pass
            elif self.paragraph < 0:
                self.paragraph, self.paragraph_end = start, offset
            else:
                self.paragraph_end = offset
        if self.fence is not None:  # an unclosed fence runs to the end of the note
            self._add_block(self.fence[2], offset, _Kind.FENCE)
        self._end_paragraph()
        self._end_section()
        return self.sections

    def _in_fence(self, fence: tuple[str, int, int], line: str, end: int) -> None:
        char, length, start = fence
        mark = line.strip()
        if len(mark) >= length and mark[0] == char and _is_fence_line(mark):
            self._add_block(start, end, _Kind.FENCE)
            self.fence = None

    def _markup(self, line: str, start: int, end: int) -> bool:
        """Handles a fence opening or a heading; false for any other line."""
        fence = _FENCE.match(line)
        if fence and not (fence[1][0] == "`" and "`" in fence[2]):
            self._end_paragraph()
            self.fence = (fence[1][0], len(fence[1]), start)
            return True
        heading = _HEADING.match(line.rstrip())
        if heading is None:
            return False
        self._end_paragraph()
        level, title = len(heading[1]), (heading[2] or "").strip()
        while self.path and self.path[-1][0] >= level:
            self.path.pop()
        self.path.append((level, title))
        if self.lead is not None and not self.blocks:  # nothing under the previous heading
            self.lead = (self.lead[0], end)
        else:
            self._end_section()
            self.lead = (start, end)
        self.heading = " > ".join(title for _, title in self.path if title) or None
        return True

    def _end_paragraph(self) -> None:
        if self.paragraph < 0:
            return
        if _LIST_ITEM.match(self.text, self.paragraph):
            kind = _Kind.LIST
        elif _TABLE_OR_INDENTED_CODE.match(self.text, self.paragraph):
            kind = _Kind.LINES
        else:
            kind = _Kind.PROSE
        self._add_block(self.paragraph, self.paragraph_end, kind)
        self.paragraph = -1

    def _add_block(self, start: int, end: int, kind: _Kind) -> None:
        self.blocks.append(_leaf(self.text, start, end, kind))

    def _end_section(self) -> None:
        units = _group(self.text, self.blocks)
        if self.lead is not None:
            start, end = _strip(self.text, *self.lead)
            if units:
                units[0] = units[0]._replace(start=start)
            else:
                units = [_Unit(start, end, _Kind.PROSE, start)]
        if units:
            self.sections.append(_Section(self.heading, units))
        self.blocks = []
        self.lead = None


def _group(text: str, blocks: list[_Unit]) -> list[_Unit]:
    """Units of a section: its blocks, except that a list and its continuations are one."""
    units: list[_Unit] = []
    i = 0
    while i < len(blocks):
        j = i + 1
        if blocks[i].kind is _Kind.LIST:
            # Indented blocks (the character before the stripped start is indentation)
            # continue the list item above them.
            while j < len(blocks) and (
                blocks[j].kind is _Kind.LIST or text[blocks[j].start - 1] in " \t"
            ):
                j += 1
        if j - i == 1:
            units.append(blocks[i])
        else:
            first, last = blocks[i], blocks[j - 1]
            units.append(_Unit(first.start, last.end, _Kind.GROUP, first.start, tuple(blocks[i:j])))
        i = j
    return units


def _code_units(text: str, start: int, end: int) -> list[_Unit]:
    """Statement groups of the code in ``text[start:end]`` (see the module docstring)."""
    blocks: list[tuple[int, int, bool]] = []  # start, end, starts at a definition
    block, block_end, definition, prelude = -1, -1, False, -1
    offset = start
    for line in text[start:end].splitlines(keepends=True):
        line_start, offset = offset, offset + len(line)
        if line.isspace():
            if block != -1:
                blocks.append((block, block_end, definition))
            block, prelude = -1, -1
            continue
        if block == -1:
            block, definition = line_start, False
        if _DEFINITION.match(line):
            cut = prelude if prelude != -1 else line_start
            if cut > block:
                blocks.append((block, cut, definition))
                block = cut
            definition, prelude = True, -1
        elif _PRELUDE.match(line):
            prelude = line_start if prelude == -1 else prelude
        else:
            prelude = -1
        block_end = offset
    if block != -1:
        blocks.append((block, block_end, definition))

    units: list[_Unit] = []
    group: list[_Unit] = []
    for block_start, stop, is_definition in blocks:
        unit = _leaf(text, block_start, stop, _Kind.LINES)
        if group and not is_definition and _CONTINUATION.match(text, block_start):
            group.append(unit)
            continue
        if group:
            units.append(_statement_group(group))
        group = [unit]
    if group:
        units.append(_statement_group(group))
    return units


def _statement_group(members: list[_Unit]) -> _Unit:
    if len(members) == 1:
        return members[0]
    start, end = members[0].start, members[-1].end
    return _Unit(start, end, _Kind.GROUP, start, tuple(members))


def _parts(text: str, unit: _Unit) -> tuple[_Unit, ...]:
    """What an oversized unit opens into; empty when it has to be split instead."""
    if unit.parts:
        return unit.parts
    if unit.kind is _Kind.LIST:
        line_start = max(text.rfind("\n", 0, unit.body), text.rfind("\r", 0, unit.body)) + 1
        indent = unit.body - line_start
        starts = [unit.body]
        offset = unit.body
        for line in text[unit.body : unit.end].splitlines(keepends=True):
            if offset > unit.body and _LIST_ITEM.match(line):
                if len(line) - len(line.lstrip(" \t")) <= indent:
                    starts.append(offset)
            offset += len(line)
        starts.append(unit.end)
        return tuple(_leaf(text, a, b, _Kind.PROSE) for a, b in pairwise(starts))
    if unit.kind is _Kind.FENCE:
        opening_end = text.find("\n", unit.body, unit.end)
        if opening_end == -1:
            return ()
        body_end = unit.end
        closing = text.rfind("\n", opening_end + 1, unit.end)
        if closing != -1 and _is_fence_line(text[closing + 1 : unit.end]):
            body_end = closing + 1
        return tuple(_code_units(text, opening_end + 1, body_end))
    return ()


def _pack(text: str, units: list[_Unit], size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """Chunk spans of one section: units packed greedily, oversized ones opened or split."""
    pending = list(reversed(units))
    current: tuple[int, int] | None = None
    while pending:
        unit = pending.pop()
        if unit.end - unit.start <= size:
            if current is not None and unit.end - current[0] <= size:
                current = (current[0], unit.end)
            else:
                if current is not None:
                    yield current
                current = (unit.start, unit.end)
            continue
        parts = list(_parts(text, unit))
        if parts:
            # What the unit carries before and after its parts (a heading, fence lines)
            # goes with its first and last part.
            parts[0] = parts[0]._replace(start=unit.start)
            parts[-1] = parts[-1]._replace(end=unit.end)
            pending.extend(reversed(parts))
            continue
        if current is not None:
            yield current
            current = None
        yield from _split(text, unit, size, overlap)
    if current is not None:
        yield current


def _cut_candidates(text: str, start: int, end: int, *, prose: bool) -> list[list[int]]:
    """Positions a piece may end at, by preference: sentences (prose), lines, words.

    The unit's end counts as a word end: a piece that gives up its overlap may reach it.
    """
    lines = [m.start() for m in _LINE_BREAK.finditer(text, start, end)]
    words = [m.start() for m in _SPACE.finditer(text, start, end)]
    words.append(end)
    if not prose:
        return [lines, words]
    sentences = [
        m.end()
        for m in _SENTENCE_END.finditer(text, start, end)
        if m[1] is None or not m[1].islower()
    ]
    return [sentences, lines, words]


def _best_cut(levels: list[list[int]], low: int, limit: int) -> int | None:
    """The preferred cut in ``(low, limit]``; every level but the last must half fill."""
    half = low + (limit - low) // 2
    for level, candidates in enumerate(levels):
        i = bisect_right(candidates, limit) - 1
        if i >= 0 and candidates[i] > low and (level == len(levels) - 1 or candidates[i] >= half):
            return candidates[i]
    return None


def _joins_previous(text: str, index: int) -> bool:
    """Whether a cut before ``text[index]`` would split a grapheme (approximately)."""
    char = text[index]
    code = ord(char)
    return (
        text[index - 1] == _ZWJ
        or char == _ZWJ
        or unicodedata.category(char) in ("Mn", "Mc", "Me")  # combining marks, selectors
        or 0x1F3FB <= code <= 0x1F3FF  # emoji skin tones
        or 0xE0020 <= code <= 0xE007F  # emoji tag sequences
    )


def _split(text: str, unit: _Unit, size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """Pieces of a unit longer than ``size`` (see the module docstring)."""
    levels = _cut_candidates(text, unit.start, unit.end, prose=unit.kind in _PROSE_KINDS)
    # The first piece must hold some of the unit's own text, not just its heading.
    floor = unit.body if unit.body - unit.start < size // 2 else unit.start
    start = pos = unit.start
    while unit.end - start > size:
        low = max(pos, floor)
        cut = _best_cut(levels, low, start + size)
        if cut is None and start < pos:  # the overlap leaves no room for the next word
            cut = _best_cut(levels, low, pos + size)
            start = start if cut is None else pos
        if cut is None and low > pos and _best_cut(levels, low, low + size) is not None:
            # The first word fits in a chunk but not beside the heading: the heading goes alone.
            cut = _best_cut(levels, pos, start + size)
        hard = cut is None
        if cut is None:  # a word longer than size
            cut = start + size
            while cut - 1 > low and _joins_previous(text, cut):
                cut -= 1
        yield _strip(text, start, cut)
        if cut == unit.end:
            return
        next_pos = _skip_space(text, cut, unit.end)
        ends = None if hard else levels[0]
        start = _overlap_start(text, start, cut, next_pos, overlap, ends)
        if next_pos - start >= size // 2:
            start = next_pos
        pos = next_pos
    yield start, unit.end


def _overlap_start(
    text: str, previous: int, cut: int, pos: int, overlap: int, ends: list[int] | None
) -> int:
    """Where the piece after ``cut`` starts: up to ``overlap`` back, else at ``pos``.

    ``ends`` are the sentence or line ends of the unit, whose following starts are
    preferred to word starts; ``None`` after a hard cut, which overlaps exactly.
    """
    low = max(cut - overlap, previous + 1)
    if overlap == 0 or low >= cut:
        return pos
    if ends is None:
        start = low
        while start < cut and _joins_previous(text, start):
            start += 1
    else:
        i = bisect_left(ends, low)
        if i < len(ends) and ends[i] < cut:
            start = ends[i]
        else:
            word = _WORD_START.search(text, low, cut)
            if word is None:
                return pos
            start = word.start()
    start = _skip_space(text, start, cut)
    return pos if start >= cut else start
