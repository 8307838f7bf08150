"""What an attachment is, as stored and as answered."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from fortemi.documents.extraction.base import ExtractionStatus

__all__ = ["Attachment", "StagedFile"]


@dataclass(frozen=True, slots=True)
class Attachment:
    """An attachment row. ``extracted_text`` is not read in lists (it may be megabytes)."""

    id: UUID
    note_id: UUID
    blob_digest: str
    filename: str
    size: int
    mime_declared: str | None
    mime_detected: str
    document_type: str
    detection_method: str
    detection_confidence: float
    extraction_status: ExtractionStatus
    extraction_reason: str | None
    extraction_metadata: dict[str, Any] = field(default_factory=dict)
    preview: str | None = None
    extracted_from: UUID | None = None
    created_by: str | None = None
    created_at: datetime | None = None
    extracted_at: datetime | None = None
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StagedFile:
    """An upload copied to local disk while it was hashed: its digest, size, the first
    bytes (for detection) and the file the blob store takes."""

    path: Path
    digest: str
    size: int
    prefix: bytes
