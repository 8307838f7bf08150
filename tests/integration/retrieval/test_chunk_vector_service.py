"""What other features read of a note's chunk vectors goes through retrieval's service:
the newest set holding them (or the one asked for), its model, the vectors as stored."""

from __future__ import annotations

from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.retrieval.repository import ChunkEmbedding, NewChunk, RetrievalRepository
from fortemi.retrieval.service import ChunkVectorService, NoteChunkVectors
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSets, composition_for
from tests.integration.retrieval.conftest import Write

_DIMENSION = 8


def _vectors(seed: int, count: int, dimension: int = _DIMENSION) -> list[npt.NDArray[np.float32]]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(dimension).astype(np.float32) for _ in range(count)]


async def _chunks(db: Database, memory: str, note_id: UUID, count: int) -> list[int]:
    async with db.memory_transaction(memory) as conn:
        return await RetrievalRepository().replace_chunks(
            conn,
            note_id,
            "content",
            [NewChunk(i, f"piece {i}", i, i + 1, None) for i in range(count)],
        )


async def _embed(
    db: Database,
    memory: str,
    model: str,
    note_id: UUID,
    chunk_ids: list[int],
    vectors: list[npt.NDArray[np.float32]],
    composition: DocumentComposition | None = None,
) -> int:
    """Store ``vectors`` as the chunks' vectors in the set of ``model`` (and
    ``composition``); its id."""
    async with db.memory_transaction(memory) as conn:
        chosen = await EmbeddingSets().ensure(
            conn, model, len(vectors[0]), composition or DocumentComposition()
        )
        await RetrievalRepository().upsert_embeddings(
            conn,
            chosen,
            [
                ChunkEmbedding(chosen.id, chunk_id, note_id, "h", vector)
                for chunk_id, vector in zip(chunk_ids, vectors, strict=True)
            ],
        )
        return chosen.id


def _sorted(vectors: object) -> list[list[float]]:
    assert isinstance(vectors, tuple | list)
    return sorted(np.asarray(v, dtype=np.float32).tolist() for v in vectors)


async def test_a_notes_chunk_vectors_come_from_the_newest_set_holding_them(
    db: Database, memory: str, write: Write
) -> None:
    note_id = await write(title="vectors", content="two sets")
    chunk_ids = await _chunks(db, memory, note_id, 3)
    older = await _embed(db, memory, "older-model", note_id, chunk_ids, _vectors(1, 3))
    newer_vectors = _vectors(2, 3)
    newer = await _embed(db, memory, "newer-model", note_id, chunk_ids, newer_vectors)

    found = await ChunkVectorService(db).note_chunk_vectors(memory, note_id)

    assert newer > older
    assert (found.set_id, found.model) == (newer, "newer-model")
    assert all(v.dtype == np.float32 for v in found.vectors)
    assert _sorted(found.vectors) == _sorted(newer_vectors)


async def test_a_set_asked_for_is_read_even_when_a_newer_one_holds_the_note(
    db: Database, memory: str, write: Write
) -> None:
    note_id = await write(title="vectors", content="two sets")
    chunk_ids = await _chunks(db, memory, note_id, 2)
    older_vectors = _vectors(3, 2)
    older = await _embed(db, memory, "older-model", note_id, chunk_ids, older_vectors)
    await _embed(db, memory, "newer-model", note_id, chunk_ids, _vectors(4, 2))

    found = await ChunkVectorService(db).note_chunk_vectors(memory, note_id, older)

    assert (found.set_id, found.model) == (older, "older-model")
    assert _sorted(found.vectors) == _sorted(older_vectors)


async def test_a_note_without_vectors_has_no_set_and_a_set_without_its_vectors_no_model(
    db: Database, memory: str, write: Write
) -> None:
    bare = await write(title="bare", content="never embedded")
    other = await write(title="other", content="embedded")
    set_id = await _embed(
        db, memory, "some-model", other, await _chunks(db, memory, other, 1), _vectors(5, 1)
    )
    service = ChunkVectorService(db)

    assert await service.note_chunk_vectors(memory, bare) == NoteChunkVectors(None)
    assert await service.note_chunk_vectors(memory, bare, set_id) == NoteChunkVectors(set_id)


async def test_without_a_set_named_the_serving_set_wins_over_a_newer_abandoned_one(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    # Tag-enriched embeddings were switched on (a newer set, concept paths composed in)
    # and off again: the plain set is the one search serves from, and linking follows it.
    model = await local_backend.embedding_model()
    note_id = await write(title="vectors", content="two compositions")
    chunk_ids = await _chunks(db, memory, note_id, 2)
    plain_vectors = _vectors(6, 2, model.dimension)
    compositions = (composition_for(model.name), composition_for(model.name, concepts=True))
    plain, enriched = [
        await _embed(db, memory, model.name, note_id, chunk_ids, vectors, composition)
        for composition, vectors in zip(
            compositions, (plain_vectors, _vectors(7, 2, model.dimension)), strict=True
        )
    ]

    served = await ChunkVectorService(db, local_backend).note_chunk_vectors(memory, note_id)
    newest = await ChunkVectorService(db).note_chunk_vectors(memory, note_id)

    assert enriched > plain
    assert served.set_id == plain
    assert _sorted(served.vectors) == _sorted(plain_vectors)
    assert newest.set_id == enriched  # what a read without the backend still does
