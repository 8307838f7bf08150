"""The Extraction job: results stored, failures contained, embedding deferred meanwhile."""

from __future__ import annotations

from uuid import UUID

from fortemi.documents.attachments.jobs import (
    AttachmentPieces,
    PendingExtractions,
    extraction_job_type,
)
from fortemi.documents.attachments.models import Attachment
from fortemi.documents.attachments.service import AttachmentService
from fortemi.documents.extraction.base import (
    Extracted,
    ExtractionStatus,
    Extractor,
    Health,
    Limits,
)
from fortemi.documents.extraction.library import LibraryExtractor
from fortemi.documents.models import Detection
from fortemi.documents.service import DocumentTypeService
from fortemi.graph.tagging.jobs import concept_tagging_type, tagging_spec
from fortemi.graph.vocabulary import VocabularyService
from fortemi.inference.local import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import JobOutcome, JobSpec, Tier
from fortemi.retrieval.indexing import Chunking, embedding_job_type, embedding_spec
from tests.integration.documents.conftest import Upload
from tests.integration.graph.conftest import run_job
from tests.integration.retrieval.conftest import run_embedding


async def _attach(
    attachments: AttachmentService, memory: str, note_id: UUID, name: str, data: bytes,
    mime: str | None = None,
) -> Attachment:  # fmt: skip
    return await attachments.attach(
        memory, note_id, Upload(data), filename=name, declared_mime=mime, actor="test"
    )


async def _extract(
    attachments: AttachmentService,
    documents: DocumentTypeService,
    memory: str,
    attachment: Attachment,
    extractor: Extractor | None = None,
    enqueued: list[JobSpec] | None = None,
) -> JobOutcome:
    job_type = extraction_job_type(
        attachments,
        documents,
        extractor or LibraryExtractor(),
        followups=lambda m, n: [embedding_spec(m, n, Tier.CPU), tagging_spec(m, n)],
    )
    return await run_job(
        job_type, memory, {"attachment_id": str(attachment.id)},
        enqueued if enqueued is not None else [],
    )  # fmt: skip


async def test_a_structured_file_is_extracted_with_its_metadata_and_chunks(
    attachments: AttachmentService, documents: DocumentTypeService, db: Database,
    memory: str, note_id: UUID,
) -> None:  # fmt: skip
    stored = await _attach(attachments, memory, note_id, "stock.csv", b"item,count\npears,4\n")
    enqueued: list[JobSpec] = []
    outcome = await _extract(attachments, documents, memory, stored, enqueued=enqueued)
    assert outcome.kind == "success"
    after = await attachments.get(memory, stored.id)
    assert after is not None
    assert after.extraction_status is ExtractionStatus.DONE
    assert after.extraction_metadata["headers"] == ["item", "count"]
    assert after.extraction_metadata["rows"] == 1
    assert after.preview
    # The note's embedding was deferred while this waited: it is asked for again now.
    assert [s.type for s in enqueued] == ["Embedding", "ConceptTagging"]
    async with db.memory_transaction(memory) as conn:
        text = await conn.fetchval("SELECT attachment_text FROM note WHERE id = $1", note_id)
        assert "pears" in text
        assert await conn.fetchval("SELECT count(*) FROM attachment_chunk") >= 1
    # Idempotent: a second run changes nothing.
    again = await _extract(attachments, documents, memory, stored)
    assert again.result == {"skipped": "already_extracted"}


async def test_a_corrupt_file_fails_its_own_job_with_a_clear_reason_and_nothing_else(
    attachments: AttachmentService, documents: DocumentTypeService, db: Database,
    memory: str, note_id: UUID,
) -> None:  # fmt: skip
    good = await _attach(attachments, memory, note_id, "fine.txt", b"perfectly readable words")
    bad = await _attach(
        attachments, memory, note_id, "notes.txt", bytes(range(32)) * 64, "text/plain"
    )
    enqueued: list[JobSpec] = []
    failed = await _extract(attachments, documents, memory, bad, enqueued=enqueued)
    assert failed.kind == "failure"
    assert failed.failure_code == "not_text"
    # The note is not held back for good.
    assert [s.type for s in enqueued] == ["Embedding", "ConceptTagging"]
    after = await attachments.get(memory, bad.id)
    assert after is not None
    assert after.extraction_status is ExtractionStatus.FAILED
    assert after.extraction_reason is not None
    assert after.extraction_reason.startswith("not_text:")
    assert (await _extract(attachments, documents, memory, good)).kind == "success"
    async with db.memory_transaction(memory) as conn:
        text = await conn.fetchval("SELECT attachment_text FROM note WHERE id = $1", note_id)
    assert text == "perfectly readable words"


async def test_a_file_without_an_adapter_is_skipped_with_the_reason(
    attachments: AttachmentService, documents: DocumentTypeService, memory: str, note_id: UUID
) -> None:
    bytecode = bytes.fromhex("a70d0d0a") + b"\x00" * 60  # a .pyc: its type extracts nothing
    stored = await _attach(attachments, memory, note_id, "module.pyc", bytecode)
    outcome = await _extract(attachments, documents, memory, stored)
    assert outcome.kind == "success"
    after = await attachments.get(memory, stored.id)
    assert after is not None
    assert after.extraction_status is ExtractionStatus.SKIPPED
    assert after.extraction_reason


class _MailTwin:
    """Answers every file as a message carrying one attached file: the e-mail adapter's
    contract (``Extracted.children``), for the job's handling of children."""

    def extract(
        self, data: bytes, *, filename: str | None, detection: Detection, limits: Limits
    ) -> Extracted:
        return Extracted(
            ExtractionStatus.DONE,
            text="Please find the invoice attached.",
            adapter="email",
            children=(("invoice.txt", "text/plain", b"Invoice 42: three lamps"),),
        )

    def health(self) -> list[Health]:
        return [Health("email", True, "configured")]


async def test_files_found_inside_a_file_become_attachments_of_the_same_note(
    attachments: AttachmentService, documents: DocumentTypeService, memory: str, note_id: UUID
) -> None:
    message = await _attach(attachments, memory, note_id, "mail.eml", b"From: a@b\n\nhi")
    enqueued: list[JobSpec] = []
    outcome = await _extract(attachments, documents, memory, message, _MailTwin(), enqueued)
    assert outcome.kind == "success"
    listed = await attachments.for_note(memory, note_id)
    (child,) = [a for a in listed if a.id != message.id]
    assert child.extracted_from == message.id
    assert child.filename == "invoice.txt"
    assert child.extraction_status is ExtractionStatus.PENDING
    assert {s.type for s in enqueued} == {"Extraction", "Embedding", "ConceptTagging"}


async def test_a_note_with_a_pending_extraction_has_its_embedding_deferred(
    attachments: AttachmentService, documents: DocumentTypeService, db: Database,
    memory: str, note_id: UUID,
) -> None:  # fmt: skip
    backend = LocalEmbeddingBackend()
    try:
        job_type = embedding_job_type(
            db,
            backend,
            Chunking(),
            tier=Tier.CPU,
            gate=PendingExtractions(attachments),
            extra=AttachmentPieces(attachments),
        )
        stored = await _attach(attachments, memory, note_id, "later.txt", b"words to read")
        deferred = await run_embedding(job_type, memory, note_id)
        assert deferred.result == {"skipped": "deferred"}
        await _extract(attachments, documents, memory, stored)
        embedded = await run_embedding(job_type, memory, note_id)
        assert embedded.result == {"chunks": 2, "embedded": 2}
        async with db.memory_transaction(memory) as conn:
            rows = await conn.fetch(
                "SELECT text, heading FROM chunk WHERE note_id = $1 ORDER BY ordinal", note_id
            )
        assert [(r["text"], r["heading"]) for r in rows][1] == ("words to read", "later.txt")
        # Unchanged note and attachments: nothing is cut or embedded again.
        again = await run_embedding(job_type, memory, note_id)
        assert again.result == {"chunks": 2, "embedded": 0}
    finally:
        await backend.aclose()


async def test_a_note_with_a_pending_extraction_has_its_tagging_deferred(
    attachments: AttachmentService, db: Database, memory: str, note_id: UUID
) -> None:
    backend = LocalEmbeddingBackend()
    try:
        job_type = concept_tagging_type(
            db, VocabularyService(db), backend, gate=PendingExtractions(attachments)
        )
        await _attach(attachments, memory, note_id, "later.txt", b"words to read")
        outcome = await run_job(job_type, memory, {"note_id": str(note_id)})
        assert outcome.result == {"skipped": "deferred"}
    finally:
        await backend.aclose()


async def test_files_nested_past_the_depth_limit_are_not_attached(
    attachments: AttachmentService, documents: DocumentTypeService, memory: str, note_id: UUID
) -> None:
    current = await _attach(attachments, memory, note_id, "mail.eml", b"From: a@b\n\nhi")
    results = []
    for _ in range(3):  # the message, its attachment, that one's: depth 0, 1, 2
        outcome = await _extract(attachments, documents, memory, current, _MailTwin())
        results.append(outcome.result or {})
        found = [
            a for a in await attachments.for_note(memory, note_id) if a.extracted_from == current.id
        ]
        if not found:
            break
        current = found[0]
    assert [len(r.get("children", [])) for r in results] == [1, 1, 0]
    assert results[-1]["children_dropped"] == 1
    assert len(await attachments.for_note(memory, note_id)) == 3
