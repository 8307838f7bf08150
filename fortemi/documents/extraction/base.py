"""The one interface every extraction adapter answers, and what an extraction returns.

An :class:`Extractor` turns a file's bytes (with what detection took them for) into
searchable text, metadata and an optional preview. It never raises for a bad file: a
corrupt, hostile or oversized file comes back as ``FAILED`` with a reason, a file whose
adapter needs a service that is not configured as ``SKIPPED`` with the reason, so the
attachment is stored and listed either way and its job ends.

``extract`` is synchronous and CPU-bound; callers run it in a worker thread
(``asyncio.to_thread``) under the limits in :class:`Limits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from fortemi.documents.models import Detection

__all__ = ["Extracted", "ExtractionStatus", "Extractor", "Health", "Limits"]

MB = 1024 * 1024


class ExtractionStatus(Enum):
    PENDING = "pending"  # stored, its Extraction job not yet run
    DONE = "done"
    SKIPPED = "skipped"  # nothing to extract, or the adapter's service is not configured
    FAILED = "failed"  # the file could not be read: corrupt, hostile, over a limit


@dataclass(frozen=True, slots=True)
class Limits:
    max_text_bytes: int = 10 * MB  # extracted text is cut here (and says so in metadata)
    time_budget_seconds: float = 60.0  # per file
    pdf_page_batch: int = 16
    max_pdf_pages: int = 2000
    max_archive_members: int = 1000
    max_archive_total_bytes: int = 200 * MB  # uncompressed, across members
    max_archive_ratio: float = 100.0  # uncompressed / compressed, per member and overall
    max_archive_depth: int = 2


@dataclass(frozen=True, slots=True)
class Extracted:
    status: ExtractionStatus
    text: str = ""
    # JSON-serialisable: counts, keys, headers, pages, EXIF provenance, truncation, ...
    metadata: dict[str, Any] = field(default_factory=dict)
    preview: str | None = None  # a short plain-text excerpt for lists
    reason: str | None = None  # "code: detail" when SKIPPED or FAILED
    adapter: str = ""  # which adapter answered ("pdf", "office", "text", ...)
    # files found inside this one that deserve their own attachment (e-mail attachments):
    # (filename, declared MIME type or None, bytes)
    children: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class Health:
    adapter: str
    healthy: bool
    detail: str  # "configured", or why not: "no vision model configured (FORTEMI_...)"


class Extractor(Protocol):
    def extract(
        self, data: bytes, *, filename: str | None, detection: Detection, limits: Limits
    ) -> Extracted: ...

    def health(self) -> list[Health]: ...
