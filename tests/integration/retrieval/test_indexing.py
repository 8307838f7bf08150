"""The ``Embedding`` job writes only what still matches the note, and the search index
status counts the embedding jobs still to run."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fortemi.inference import EmbeddingModel, Embeddings, LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Tier
from fortemi.platform.jobs.repository import JobInsert, JobRepository
from fortemi.platform.notes import NotePatch, NoteService
from fortemi.retrieval.indexing import EMBEDDING, Chunking, embedding_job_type
from fortemi.retrieval.search import SearchService
from tests.integration.retrieval.conftest import Index, Write, run_embedding


class _EditsWhileEmbedding:
    """The local backend, running ``meanwhile`` (an edit of the note) before it embeds: the
    note changes between the job's read and its write."""

    name = "local"
    can_generate = False

    def __init__(self, inner: LocalEmbeddingBackend, meanwhile: Callable[[], Awaitable[Any]]):
        self._inner = inner
        self._meanwhile = meanwhile

    async def embedding_model(self) -> EmbeddingModel:
        return await self._inner.embedding_model()

    async def embed(self, texts: Sequence[str], *, model: str | None = None) -> Embeddings:
        await self._meanwhile()
        return await self._inner.embed(texts, model=model)

    async def generate(self, prompt: str, **_: Any) -> Any:
        raise AssertionError("the Embedding job generates nothing")

    async def aclose(self) -> None:
        return None


async def _stored(db: Database, memory: str, note_id: uuid.UUID) -> tuple[int, int]:
    async with db.memory_transaction(memory) as conn:
        chunks = await conn.fetchval("SELECT count(*) FROM chunk WHERE note_id = $1", note_id)
        vectors = await conn.fetchval(
            "SELECT count(*) FROM chunk_embedding WHERE note_id = $1", note_id
        )
    return int(chunks), int(vectors)


async def test_vectors_of_a_text_edited_while_it_was_embedded_are_not_written(
    db: Database,
    memory: str,
    write: Write,
    notes: NoteService,
    local_backend: LocalEmbeddingBackend,
    index: Index,
) -> None:
    note = await write("Draft", "The first wording of the note.")

    async def edit() -> None:
        await notes.update(memory, note, NotePatch(content="A second wording."), actor="test")

    backend = _EditsWhileEmbedding(local_backend, edit)
    job_type = embedding_job_type(db, backend, Chunking(size=300, overlap=50), tier=Tier.CPU)
    outcome = await run_embedding(job_type, memory, note)
    assert (outcome.kind, outcome.result) == ("success", {"skipped": "superseded"})
    assert await _stored(db, memory, note) == (0, 0)
    # The edit's own job (here: the next run) indexes the text as it is now.
    assert (await index(note)).result == {"chunks": 1, "embedded": 1}
    assert await _stored(db, memory, note) == (1, 1)


async def test_index_status_counts_the_memorys_embedding_jobs_still_to_run(
    db: Database, memory: str
) -> None:
    jobs = JobRepository()

    def job(type: str) -> JobInsert:
        return JobInsert(
            id=uuid.uuid4(), memory=memory, type=type, tier=Tier.CPU, priority=4,
            payload={"note_id": str(uuid.uuid4())}, max_attempts=8, dedupe_key=None,
            requested_by="test",
        )  # fmt: skip

    async with db.shared_transaction() as conn:
        inserted = [await jobs.insert(conn, job(EMBEDDING)) for _ in range(3)]
        await jobs.insert(conn, job("SomethingElse"))
        first = inserted[0]
        assert first is not None
        await jobs.cancel(conn, first.id)
    status = await SearchService(db, None).index_status(memory)
    assert status.pending_embedding_jobs == 2  # the cancelled one and the other type don't count
