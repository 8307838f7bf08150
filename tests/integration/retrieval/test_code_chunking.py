"""The ``Embedding`` job with the documents feature's chunker (as the composition root
builds it): code notes are stored in chunks cut at their definitions, markdown notes in
the chunks they had before."""

from __future__ import annotations

from uuid import UUID

from fortemi.documents.chunking import CodeChunker
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Tier
from fortemi.retrieval.chunking import chunk_text
from fortemi.retrieval.indexing import Chunking, embedding_job_type
from tests.integration.retrieval.conftest import Write, run_embedding

PYTHON = "".join(
    f'def step_{i}(value):\n    """Step {i} of the pipeline."""\n'
    f"    return value * {i} + {i} - {i} // 2 + len(str(value))\n\n\n"
    for i in range(4)
)


async def _chunks(db: Database, memory: str, note_id: UUID) -> list[tuple[str, str | None]]:
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT text, heading FROM chunk WHERE note_id = $1 ORDER BY ordinal", note_id
        )
    return [(row["text"], row["heading"]) for row in rows]


async def test_a_code_note_is_stored_in_chunks_cut_at_its_functions_and_markdown_as_before(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    chunking = Chunking(size=150, overlap=30, chunker=CodeChunker(chunk_text))
    job = embedding_job_type(db, local_backend, chunking, tier=Tier.CPU)
    markdown = (
        "# Plan\n\n" + "We ship on Friday after the review. " * 12 + "\n\n## Risks\n\nNone.\n"
    )
    code_note = await write("pipeline", PYTHON, format="python")
    prose_note = await write("plan", markdown)

    await run_embedding(job, memory, code_note)
    await run_embedding(job, memory, prose_note)

    code = await _chunks(db, memory, code_note)
    prose = await _chunks(db, memory, prose_note)
    assert [heading for _, heading in code] == [f"step_{i}" for i in range(4)]
    assert all(text.startswith("def step_") for text, _ in code)
    assert prose == [(c.text, c.heading) for c in chunk_text(markdown, size=150, overlap=30)]
