"""Attachment services over the session's PostgreSQL, with a blob store per test, and the
service doubles the extraction adapters talk to over real sockets."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest

from fortemi.documents.attachments.service import AttachmentService
from fortemi.documents.attachments.storage import BlobStore, LocalBlobStore
from fortemi.documents.service import DocumentTypeService
from fortemi.platform.database import Database
from fortemi.platform.jobs.service import JobService
from fortemi.platform.notes import NoteDraft, NoteService
from fortemi.platform.settings import Settings
from fortemi.retrieval.chunking import chunk_text
from fortemi.runtime import job_registry
from tests.support.ollama_double import OllamaDouble
from tests.support.whisper_double import WhisperDouble

WHISPER_KEY = "whisper-test-key"


@pytest.fixture(scope="module")
def ollama_double() -> Iterator[OllamaDouble]:
    with OllamaDouble() as double:
        double.vision.update({"llava-test", "ocr-test"})
        yield double


@pytest.fixture(scope="module")
def whisper_double() -> Iterator[WhisperDouble]:
    with WhisperDouble(api_key=WHISPER_KEY) as double:
        yield double


class Upload:
    """Bytes as the web framework hands an upload (an async ``read``)."""

    def __init__(self, data: bytes) -> None:
        self._buffer = io.BytesIO(data)

    async def read(self, size: int = -1) -> bytes:
        return self._buffer.read(size)


@pytest.fixture
def notes(db: Database) -> NoteService:
    return NoteService(db, max_note_bytes=1_000_000, max_page_size=100, max_upsert_batch=100)


@pytest.fixture
def documents(db: Database) -> DocumentTypeService:
    return DocumentTypeService(db, chunk_text)


@pytest.fixture
def local_store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


def make_service(
    settings: Settings,
    db: Database,
    store: BlobStore,
    documents: DocumentTypeService,
    notes: NoteService,
    staging: Path,
    max_upload_bytes: int = 1_000_000,
) -> AttachmentService:
    staging.mkdir(parents=True, exist_ok=True)
    jobs = JobService(db, job_registry(settings)(db))
    return AttachmentService(
        db, store, documents, notes, jobs, staging=staging, max_upload_bytes=max_upload_bytes
    )


@pytest.fixture
def attachments(
    settings: Settings,
    db: Database,
    local_store: LocalBlobStore,
    documents: DocumentTypeService,
    notes: NoteService,
    tmp_path: Path,
) -> AttachmentService:
    return make_service(settings, db, local_store, documents, notes, tmp_path / "staging")


@pytest.fixture
async def note_id(notes: NoteService, memory: str) -> UUID:
    note = await notes.create(memory, NoteDraft(title="Holder", content="files"), actor="test")
    return note.id
