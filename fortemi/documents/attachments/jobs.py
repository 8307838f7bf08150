"""The ``Extraction`` job: an attachment's bytes read into searchable text.

``Extraction`` (tier cpu, priority 6, above ``Embedding``'s 4): payload
``{"attachment_id": "<uuid>"}`` in the job's memory. The extractor runs in a worker thread
under :class:`~fortemi.documents.extraction.base.Limits`; its result (status, reason,
metadata, preview, text) is stored with the text's chunks, cut as the detected type
deserves (:meth:`DocumentTypeService.chunk`). The note's searchable text follows without
a new note version. Files found inside (an e-mail's attachments) become attachments of the
same note, each with its own job.

While a note has an extraction pending, its ``Embedding`` job is deferred (it ends as
skipped, see :class:`PendingExtractions`); every run here ends by enqueueing the
``followups`` the composition root gave (the note's embedding), whatever the outcome, so
the note never waits for good.

Outcomes: DONE and SKIPPED succeed; FAILED (corrupt, hostile, over a limit, timed out)
fails this job only, with the reason's code as the failure code, and harms nothing else.
An attachment gone or already extracted succeeds with ``skipped`` (runs are idempotent).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any
from uuid import UUID

from fortemi.documents.attachments.models import Attachment
from fortemi.documents.attachments.repository import NewChunk
from fortemi.documents.attachments.service import EXTRACTION, AttachmentService, extraction_spec
from fortemi.documents.extraction.base import Extracted, ExtractionStatus, Extractor, Limits
from fortemi.documents.models import Detection
from fortemi.documents.service import DocumentTypeService
from fortemi.platform.database import Connection
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobSpec, JobType, Tier

__all__ = [
    "MAX_EMBEDDED_CHUNKS",
    "AttachmentPieces",
    "ExtractionFollowups",
    "PendingExtractions",
    "extraction_job_type",
]

# Attachment chunks a note's vectors cover at most: a 10 MB extraction is thousands of
# chunks, each an embedding call's worth of work on every change of the note; past this
# the rest of the text is still found lexically.
MAX_EMBEDDED_CHUNKS = 200

log = logging.getLogger(__name__)

# (memory, note id) → the jobs to enqueue once an attachment of the note is extracted.
ExtractionFollowups = Callable[[str, UUID], Sequence[JobSpec]]


class PendingExtractions:
    """Whether a note waits for an extraction: the gate the composition root hands the
    ``Embedding`` job, so retrieval knows nothing of attachments."""

    def __init__(self, attachments: AttachmentService) -> None:
        self._attachments = attachments

    async def __call__(self, conn: Connection, note_id: UUID) -> bool:
        return await self._attachments.has_pending(conn, note_id)


class AttachmentPieces:
    """The note's extracted attachment chunks for its ``Embedding`` job (retrieval's
    ``ExtraPieces``), so a note is found semantically by its files too."""

    def __init__(self, attachments: AttachmentService, limit: int = MAX_EMBEDDED_CHUNKS) -> None:
        self._attachments = attachments
        self._limit = limit

    async def __call__(self, conn: Connection, note_id: UUID) -> list[tuple[str, str | None]]:
        return await self._attachments.chunks_for_embedding(conn, note_id, self._limit)


def _reason_code(reason: str | None, fallback: str) -> str:
    code = (reason or "").split(":", 1)[0].strip()
    return code or fallback


def _cap(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


def _run(
    extractor: Extractor, data: bytes, filename: str, detection: Detection, limits: Limits
) -> Extracted:
    try:
        return extractor.extract(data, filename=filename, detection=detection, limits=limits)
    except Exception as exc:  # an adapter must not raise; if one does, only this file fails
        log.warning("extractor raised %s on %s", type(exc).__name__, filename)
        return Extracted(
            ExtractionStatus.FAILED, reason=f"extractor_error: {type(exc).__name__}: {exc}"[:500]
        )


def extraction_job_type(
    attachments: AttachmentService,
    documents: DocumentTypeService,
    extractor: Extractor,
    *,
    limits: Limits | None = None,
    followups: ExtractionFollowups | None = None,
) -> JobType:
    bounds = limits or Limits()

    async def extract(context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        if memory is None:
            return JobOutcome.failure("memory_required")
        try:
            attachment_id = UUID(str(context.job.payload.get("attachment_id")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        attachment = await attachments.get(memory, attachment_id)
        if attachment is None:
            return JobOutcome.success({"skipped": "attachment_gone"})
        if attachment.extraction_status is not ExtractionStatus.PENDING:
            return JobOutcome.success({"skipped": "already_extracted"})
        detection = await attachments.detection_of(memory, attachment)
        data = await attachments.store.read_all(
            memory, attachment.blob_digest, attachments.max_upload_bytes
        )
        try:
            extracted = await asyncio.wait_for(
                asyncio.to_thread(_run, extractor, data, attachment.filename, detection, bounds),
                timeout=bounds.time_budget_seconds,
            )
        except TimeoutError:
            # The thread cannot be stopped; it finishes on its own and is ignored.
            extracted = Extracted(
                ExtractionStatus.FAILED,
                reason=f"timeout: extraction took over {bounds.time_budget_seconds:g} s",
            )
        del data
        chunks: list[NewChunk] = []
        if extracted.status is ExtractionStatus.DONE:
            text, cut = _cap(extracted.text, bounds.max_text_bytes)
            if cut:
                extracted = _with(extracted, text=text, truncated=True)
            if text:
                pieces = documents.chunk(text, detection)
                chunks = [
                    NewChunk(c.ordinal, c.text, c.start, c.end, c.heading) for c in pieces.chunks
                ]
        recorded = await attachments.record(memory, attachment.id, extracted, chunks)
        if recorded is None:
            return JobOutcome.success({"skipped": "attachment_gone"})
        children: list[str] = []
        # Files inside files inside files: each level is a job of its own, so nesting is
        # bounded here (an e-mail forwarding itself cannot make attachments forever).
        depth = await _depth(attachments, memory, recorded)
        kept = extracted.children[: bounds.max_archive_members]
        if depth >= bounds.max_archive_depth:
            kept = ()
        dropped = len(extracted.children) - len(kept)
        for name, mime, payload in kept:
            child = await attachments.attach_child(
                memory, recorded, payload, filename=name, declared_mime=mime
            )
            children.append(str(child.id))
            if child.extraction_status is ExtractionStatus.PENDING:
                await context.enqueue(extraction_spec(memory, child.id, context.job.requested_by))
        for spec in followups(memory, attachment.note_id) if followups else ():
            await context.enqueue(spec)
        if extracted.status is ExtractionStatus.FAILED:
            return JobOutcome.failure(_reason_code(extracted.reason, "extraction_failed"))
        result: dict[str, Any] = {"status": extracted.status.value, "chunks": len(chunks)}
        if extracted.reason:
            result["reason"] = extracted.reason
        if children:
            result["children"] = children
        if dropped:
            result["children_dropped"] = dropped
        return JobOutcome.success(result)

    return JobType(name=EXTRACTION, tier=Tier.CPU, priority=6, handler=extract, max_attempts=3)


async def _depth(attachments: AttachmentService, memory: str, attachment: Attachment) -> int:
    """How many files ``attachment`` was found inside."""
    depth = 0
    parent = attachment.extracted_from
    while parent is not None:
        depth += 1
        found = await attachments.get(memory, parent)
        parent = None if found is None else found.extracted_from
    return depth


def _with(extracted: Extracted, *, text: str, truncated: bool) -> Extracted:
    return replace(
        extracted, text=text, metadata={**extracted.metadata, "text_truncated": truncated}
    )
