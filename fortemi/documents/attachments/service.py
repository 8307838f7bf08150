"""Attachments of a memory's notes: the operations and their invariants.

* :meth:`AttachmentService.attach` streams an upload to local disk (hashed on the way,
  refused past ``max_upload_bytes`` with ``file_too_large`` before anything is stored),
  detects its type, stores the blob once per memory (content-addressed: a second copy of
  the same bytes only adds a row), and writes the attachment row and its ``Extraction``
  job in one transaction. The job is sent after commit.
* A zero-byte file is stored and listed, with ``extractionStatus: SKIPPED`` and reason
  ``empty_file``: an empty file is still a fact worth keeping (a placeholder, a lock file),
  there is just nothing to read in it, and no job is queued.
* :meth:`delete` removes an attachment for good; a note's soft delete soft-deletes its
  attachments and a restore brings them back (triggers, migration 0011); purging the note
  removes their rows. :meth:`sweep` then removes blobs nothing references, rows and bytes.
* :meth:`extract` is the ``Extraction`` job's work (:mod:`.jobs`).

Authorization is the caller's (the GraphQL resolvers and the download route ask for
``write`` or ``read`` on the note): this service trusts what it is asked. Errors:
BadUserInput (``file_too_large``, a bad filename), NotFound (no such note or attachment),
Conflict (the note is deleted), Unavailable (the blob store failed).
"""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from uuid import UUID, uuid4

from fortemi.documents.attachments.intake import Readable, discard, stage
from fortemi.documents.attachments.models import Attachment, StagedFile
from fortemi.documents.attachments.repository import AttachmentRepository, NewChunk
from fortemi.documents.attachments.storage import BlobStore
from fortemi.documents.extraction.base import Extracted, ExtractionStatus
from fortemi.documents.models import Detection, Method
from fortemi.documents.service import DocumentTypeService
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.jobs.models import Job, JobSpec
from fortemi.platform.jobs.service import JobService
from fortemi.platform.notes import Note as NoteModel
from fortemi.platform.notes import NoteDraft, NoteService
from fortemi.platform.notes.repository import NoteRepository

__all__ = ["EXTRACTION", "AttachmentService", "extraction_spec"]

log = logging.getLogger(__name__)

EXTRACTION = "Extraction"
_MAX_FILENAME = 255


def extraction_spec(memory: str, attachment_id: UUID, requested_by: str | None = None) -> JobSpec:
    """One ``Extraction`` job per attachment, however often it is asked for."""
    return JobSpec(
        type=EXTRACTION,
        memory=memory,
        payload={"attachment_id": str(attachment_id)},
        dedupe_key=f"{EXTRACTION}:{memory}:{attachment_id}",
        requested_by=requested_by,
    )


def clean_filename(filename: str | None) -> str:
    """The name kept for a file: its last path component, control characters removed,
    at most 255 characters; ``file`` when nothing is left."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    if name in ("", ".", ".."):
        return "file"
    if len(name) > _MAX_FILENAME:
        _, dot, ext = name.rpartition(".")
        keep = ext if dot and len(ext) <= 16 else ""
        name = name[: _MAX_FILENAME - len(keep) - 1] + "." + keep if keep else name[:_MAX_FILENAME]
    return name


def clean_mime(declared: str | None) -> str | None:
    if declared is None:
        return None
    value = declared.split(";", 1)[0].strip().lower()
    if not value or len(value) > 255 or "/" not in value:
        return None
    return value


@dataclass(frozen=True, slots=True)
class _Incoming:
    staged: StagedFile
    filename: str
    declared: str | None
    detection: Detection


class AttachmentService:
    def __init__(
        self,
        db: Database,
        store: BlobStore,
        documents: DocumentTypeService,
        notes: NoteService,
        jobs: JobService | None,
        *,
        staging: Path,
        max_upload_bytes: int,
        dispatch: Callable[[Sequence[Job]], Awaitable[None]] | None = None,
    ) -> None:
        self._db = db
        self.store = store
        self._documents = documents
        self._notes = notes
        self._jobs = jobs
        self._staging = staging
        self.max_upload_bytes = max_upload_bytes
        self._dispatch = dispatch
        self._repo = AttachmentRepository()
        self._note_rows = NoteRepository()

    # -- writing ---------------------------------------------------------------------------

    async def attach(
        self,
        memory: str,
        note_id: UUID,
        source: Readable,
        *,
        filename: str | None,
        declared_mime: str | None,
        actor: str | None,
    ) -> Attachment:
        incoming = await self._receive(memory, source, filename, declared_mime)
        return await self._keep(memory, note_id, incoming, actor=actor)

    async def create_note_from_file(
        self,
        memory: str,
        draft: NoteDraft,
        source: Readable,
        *,
        filename: str | None,
        declared_mime: str | None,
        actor: str | None,
    ) -> tuple[NoteModel, Attachment]:
        """A new note (titled after the file unless the draft has a title) holding the file.
        The upload is received (and its size checked) before the note is made."""
        incoming = await self._receive(memory, source, filename, declared_mime)
        try:
            if not draft.title:
                draft = _titled(draft, incoming.filename)
            note = await self._notes.create(memory, draft, actor=actor)
        except BaseException:
            discard(incoming.staged.path)
            raise
        return note, await self._keep(memory, note.id, incoming, actor=actor)

    async def _receive(
        self, memory: str, source: Readable, filename: str | None, declared_mime: str | None
    ) -> _Incoming:
        name = clean_filename(filename)
        staged = await stage(source, self._staging, self.max_upload_bytes, name)
        declared = clean_mime(declared_mime)
        try:
            detection = await self._documents.detect_in(memory, name, declared, staged.prefix)
        except BaseException:
            discard(staged.path)
            raise
        return _Incoming(staged, name, declared, detection)

    async def _keep(
        self,
        memory: str,
        note_id: UUID,
        incoming: _Incoming,
        *,
        actor: str | None,
        extracted_from: UUID | None = None,
        enqueue: bool = True,
    ) -> Attachment:
        staged, detection = incoming.staged, incoming.detection
        empty = staged.size == 0
        created: list[Job] = []
        try:
            async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
                await self._live_note(conn, note_id)
                # The blob's row is locked (or new) before its bytes are looked for, so a
                # concurrent sweep cannot remove them between the look and the commit; bytes
                # already there (the same content) are not sent again. A row never names
                # bytes the store lacks once this commits.
                await self._repo.add_blob(conn, staged.digest, staged.size)
                if not await self.store.exists(memory, staged.digest):
                    await self.store.put(memory, staged.digest, staged.path)
                attachment = await self._repo.insert(
                    conn,
                    id=uuid4(),
                    note_id=note_id,
                    digest=staged.digest,
                    filename=incoming.filename,
                    size=staged.size,
                    mime_declared=incoming.declared,
                    mime_detected=detection.type.mime_type,
                    document_type=detection.type.name,
                    method=detection.method.value,
                    confidence=round(detection.confidence, 4),
                    status=(ExtractionStatus.SKIPPED if empty else ExtractionStatus.PENDING).value,
                    reason="empty_file: the file has no bytes" if empty else None,
                    extracted_from=extracted_from,
                    actor=actor,
                )
                if enqueue and not empty:
                    if self._jobs is None:  # the workers' instance only adds children
                        raise RuntimeError("this attachment service cannot enqueue jobs")
                    job, new = await self._jobs.enqueue(
                        conn, extraction_spec(memory, attachment.id, actor)
                    )
                    if new:
                        created.append(job)
        finally:
            discard(staged.path)
        if created and self._jobs is not None:
            await self._jobs.announce_created(created)
            if self._dispatch is not None:
                await self._dispatch(created)
        return attachment

    async def _live_note(self, conn: Connection, note_id: UUID) -> None:
        note = await self._note_rows.get(conn, note_id)
        if note is None:
            raise NotFound(f"No note {note_id} in this memory", id=str(note_id))
        if note.deleted_at is not None:
            raise Conflict(
                f"Note {note_id} is deleted; restore it before attaching files",
                reason="note_deleted",
                note_id=str(note_id),
            )

    async def attach_child(
        self,
        memory: str,
        parent: Attachment,
        data: bytes,
        *,
        filename: str,
        declared_mime: str | None,
    ) -> Attachment:
        """A file found inside ``parent`` (an e-mail's attachment), kept as an attachment
        of the same note naming its parent; its extraction is the caller's to enqueue."""
        incoming = await self._receive(memory, _Bytes(data), filename, declared_mime)
        return await self._keep(
            memory,
            parent.note_id,
            incoming,
            actor=parent.created_by,
            extracted_from=parent.id,
            enqueue=False,
        )

    async def delete(self, memory: str, attachment_id: UUID) -> Attachment:
        """Remove an attachment (and those extracted from it) for good; its blob goes when
        nothing else references it. NOT_FOUND when absent."""
        async with self._db.memory_transaction(
            memory, subject=f"Attachment {attachment_id}"
        ) as conn:
            found = await self._repo.get(conn, attachment_id)
            if found is None:
                raise _not_found(attachment_id)
            await self._repo.delete(conn, attachment_id)
        await self.sweep(memory)
        return found

    async def sweep(self, memory: str) -> list[str]:
        """Remove the blobs no attachment references any more, bytes then rows, with the
        rows locked meanwhile (an attach of the same bytes waits, then stores them again).
        Should the transaction fail after the bytes went, the rows stay orphans: nothing
        names them, the next sweep removes them, and an attach finds the bytes missing and
        stores them. Returns the digests."""
        async with self._db.memory_transaction(memory) as conn:
            digests = await self._repo.lock_orphans(conn)
            for digest in digests:
                await self.store.delete(memory, digest)
            if digests:
                await self._repo.drop_blobs(conn, digests)
        return digests

    async def forget_memory(self, memory: str) -> None:
        """Remove a deleted memory's blobs from the store (its rows went with its schema)."""
        await self.store.delete_memory(memory)

    # -- extraction results ----------------------------------------------------------------

    async def detection_of(self, memory: str, attachment: Attachment) -> Detection:
        """The detection recorded at upload, with the type as the memory now defines it
        (``binary`` when the type has since been removed)."""
        index = await self._documents.index_for(memory)
        kind = index.get(attachment.document_type) or index.get("binary")
        if kind is None:  # the shipped registry always has a binary type
            raise RuntimeError("no 'binary' document type in the registry")
        return Detection(kind, attachment.detection_confidence, Method(attachment.detection_method))

    async def record(
        self, memory: str, attachment_id: UUID, extracted: Extracted, chunks: Sequence[NewChunk]
    ) -> Attachment | None:
        """Store what extraction found, with the text's chunks, in one transaction; the
        note's searchable text follows (trigger) and no note version is made. None when the
        attachment is gone meanwhile."""
        done = extracted.status is ExtractionStatus.DONE
        async with self._db.memory_transaction(
            memory, subject=f"Attachment {attachment_id}"
        ) as conn:
            updated = await self._repo.record_result(
                conn,
                attachment_id,
                status=extracted.status.value,
                reason=extracted.reason,
                metadata={**extracted.metadata, "adapter": extracted.adapter},
                preview=extracted.preview,
                text=extracted.text if done else None,
            )
            if updated is not None:
                await self._repo.replace_chunks(conn, attachment_id, chunks if done else ())
        return updated

    # -- reading ---------------------------------------------------------------------------

    async def get(self, memory: str, attachment_id: UUID) -> Attachment | None:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.get(conn, attachment_id)

    async def for_note(self, memory: str, note_id: UUID) -> list[Attachment]:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.for_note(conn, note_id)

    async def extracted_text(self, memory: str, attachment_id: UUID) -> str | None:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.text(conn, attachment_id)

    def content(self, memory: str, attachment: Attachment) -> AsyncIterator[bytes]:
        """The attachment's bytes, in bounded chunks."""
        return self.store.read(memory, attachment.blob_digest)

    async def references(self, memory: str, digest: str) -> int:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.references(conn, digest)

    async def chunks_for_embedding(
        self, conn: Connection, note_id: UUID, limit: int
    ) -> list[tuple[str, str | None]]:
        """The note's attachment chunks as (text, heading) for its vectors, each headed by
        its file's name (in the caller's transaction)."""
        found = await self._repo.note_chunks(conn, note_id, limit)
        return [(text, f"{name} > {heading}" if heading else name) for text, heading, name in found]

    async def has_pending(self, conn: Connection, note_id: UUID) -> bool:
        """Whether the note waits for an extraction (in the caller's transaction)."""
        return await self._repo.has_pending(conn, note_id)


def _titled(draft: NoteDraft, filename: str) -> NoteDraft:
    return replace(draft, title=filename)


def _not_found(attachment_id: UUID) -> NotFound:
    return NotFound(f"No attachment {attachment_id} in this memory", id=str(attachment_id))


class _Bytes:
    """Bytes already in memory (a child of an extracted file) as an upload."""

    def __init__(self, data: bytes) -> None:
        self._buffer = io.BytesIO(data)

    async def read(self, size: int = -1) -> bytes:
        return self._buffer.read(size)
