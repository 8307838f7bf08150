"""What every adapter shares: one extraction's run (limits, time budget, nested depth), the
bounded text it writes, and the two ways an adapter gives up.

An adapter raises :class:`Unreadable` (the file is corrupt, hostile or over a limit) or
:class:`Unavailable` (its service is not configured or not reachable); the library turns
them into ``FAILED`` and ``SKIPPED`` with the reason ``"code: detail"``. Anything else an
adapter raises is a defect the library contains the same way (``FAILED``), so a file never
takes its job's worker down.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fortemi.documents.extraction.base import Extracted, Limits

__all__ = [
    "PREVIEW_CHARS",
    "AdapterError",
    "Nested",
    "Read",
    "Run",
    "TextSink",
    "Unavailable",
    "Unreadable",
    "corrupt",
    "counts",
    "decode_text",
    "preview_of",
]

PREVIEW_CHARS = 280


class AdapterError(Exception):
    """An adapter's reason to stop: ``code`` is stable (``corrupt_pdf``), ``detail`` says
    what a person can do about it."""

    def __init__(self, code: str, detail: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.metadata = metadata or {}  # what was read before giving up (EXIF of an image)

    @property
    def reason(self) -> str:
        return f"{self.code}: {self.detail}"


class Unreadable(AdapterError):
    """The file cannot be read: FAILED. Retrying the same bytes cannot help."""


class Unavailable(AdapterError):
    """The adapter's service is not configured or did not answer: SKIPPED."""


@dataclass(frozen=True, slots=True)
class Read:
    """What an adapter read from a file it could read (the library makes it DONE)."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False  # the adapter stopped early at the text limit
    children: tuple[tuple[str, str | None, bytes], ...] = ()


def corrupt(kind: str, exc: Exception) -> Unreadable:
    """The translation of a document library's error on a file it cannot open (those
    libraries raise zip, XML, key and value errors alike): ``corrupt_document``."""
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    detail = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return Unreadable("corrupt_document", f"not a readable {kind} file ({detail})")


# Extracts a member of a container (an archive's file) with the library's own dispatch, one
# level deeper: (member name, its bytes, the member's run) -> what any file gets.
Nested = Callable[[str, bytes, "Run"], Extracted]


@dataclass
class Run:
    """One extraction: its limits, its deadline and how deep in nested containers it is.

    The time budget is cooperative: Python cannot interrupt a library call, so adapters
    call :meth:`check` between units of work (pages, members, rows, slides, sheets). A
    single unit (one page's text, one YAML parse) is bounded by the file's size, which the
    upload limit bounds.
    """

    limits: Limits
    clock: Callable[[], float] = time.monotonic
    depth: int = 0
    nested: Nested | None = None
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = self.clock() + self.limits.time_budget_seconds

    def check(self, where: str) -> None:
        """Raise ``time_limit`` when the budget is spent (``where``: what was being read)."""
        if self.clock() > self.deadline:
            raise Unreadable(
                "time_limit",
                f"extraction took over {self.limits.time_budget_seconds:g} s ({where}); "
                "split the file or raise the limit",
            )

    def child(self) -> Run:
        """The run for a member: the same deadline, one level deeper."""
        inner = Run(self.limits, self.clock, self.depth + 1, self.nested)
        inner.deadline = self.deadline
        return inner


class TextSink:
    """Extracted text that stops at ``max_bytes`` of UTF-8, cut on a character boundary;
    ``full`` tells a loop to stop reading, ``truncated`` that something was left out."""

    def __init__(self, max_bytes: int) -> None:
        self._parts: list[str] = []
        self._left = max_bytes
        self.truncated = False

    @property
    def full(self) -> bool:
        return self.truncated or self._left <= 0

    def write(self, text: str) -> bool:
        """Append ``text``; False once the limit is reached (the rest was dropped)."""
        if not text:
            return not self.full
        if self.full:
            self.truncated = True
            return False
        encoded = text.encode("utf-8", errors="replace")
        if len(encoded) <= self._left:
            self._parts.append(text)
            self._left -= len(encoded)
            return True
        # errors="ignore" drops the partial character the byte cut may leave at the end.
        self._parts.append(encoded[: self._left].decode("utf-8", errors="ignore"))
        self._left = 0
        self.truncated = True
        return False

    def text(self) -> str:
        return "".join(self._parts)


def decode_text(data: bytes) -> tuple[str, str, int]:
    """Lossy text of ``data``: (text, encoding, replaced characters). UTF-16 and UTF-8
    byte-order marks are honoured; anything else is read as UTF-8 with U+FFFD for bytes
    that are not."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text, encoding = data.decode("utf-16", errors="replace"), "utf-16"
    else:
        encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
        text = data.decode(encoding, errors="replace")
    replaced = text.count("\ufffd") - _original_replacements(data, encoding)
    return text, encoding, max(replaced, 0)


def _original_replacements(data: bytes, encoding: str) -> int:
    # U+FFFD written in the file itself is content, not a decoding loss.
    marker = "\ufffd".encode("utf-16-le" if encoding == "utf-16" else "utf-8")
    return data.count(marker)


def preview_of(text: str) -> str | None:
    """A short excerpt for lists: the first words, whitespace collapsed."""
    flat = " ".join(text[: PREVIEW_CHARS * 4].split())
    if not flat:
        return None
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


def counts(text: str) -> dict[str, Any]:
    """chars, words and lines of ``text`` (a last line without a newline counts)."""
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return {"chars": len(text), "words": len(text.split()), "lines": lines}
