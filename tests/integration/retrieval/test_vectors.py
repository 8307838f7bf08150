"""Vectors travel between Fortemi and PostgreSQL in pgvector's binary form: a float32
vector written and read back is the same vector, bit for bit."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pgvector import Vector

from fortemi.platform.database import Database
from fortemi.platform.migrations import Migrations
from fortemi.retrieval.repository import ChunkEmbedding, NewChunk, RetrievalRepository
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSets
from tests.integration.retrieval.conftest import Write

_DIMENSION = 384


def _hard_floats() -> npt.NDArray[np.float32]:
    """Values a decimal text form with 7 significant digits does not carry back: 0.1,
    1e-7, neighbours of 1 and 1/3 that need all 24 bits of the mantissa, the smallest
    normal and subnormal float32, then random normals to fill the dimension."""
    special = np.array(
        [
            0.1,
            1e-7,
            np.nextafter(np.float32(1), np.float32(2)),
            np.nextafter(np.float32(1 / 3), np.float32(1)),
            np.float32(1 / 3),
            -np.nextafter(np.float32(0.7), np.float32(0)),
            np.finfo(np.float32).tiny,
            np.finfo(np.float32).smallest_subnormal,
            np.finfo(np.float32).max,
        ],
        dtype=np.float32,
    )
    rest = np.random.default_rng(11).standard_normal(_DIMENSION - special.size)
    return np.concatenate([special, rest.astype(np.float32)])


def _same_bits(got: object, sent: npt.NDArray[np.float32]) -> None:
    assert isinstance(got, Vector)
    back = got.to_numpy().astype(np.float32)
    assert np.array_equal(back, sent)
    assert np.array_equal(back.view(np.uint32), sent.view(np.uint32))


async def test_an_embedding_written_by_the_repository_reads_back_bit_for_bit(
    db: Database, memory: str, write: Write
) -> None:
    vector = _hard_floats()
    note_id = await write(title="vectors", content="stored exactly")
    repository = RetrievalRepository()
    async with db.memory_transaction(memory) as conn:
        chosen = await EmbeddingSets().ensure(
            conn, "exactness-test", _DIMENSION, DocumentComposition()
        )
        [chunk_id] = await repository.replace_chunks(
            conn, note_id, "hash", [NewChunk(0, "stored exactly", 0, 14, None)]
        )
        await repository.upsert_embeddings(
            conn, chosen, [ChunkEmbedding(chosen.id, chunk_id, note_id, "h", vector)]
        )
    async with db.memory_transaction(memory) as conn:
        stored = await conn.fetchval(
            "SELECT embedding FROM chunk_embedding WHERE chunk_id = $1", chunk_id
        )
    _same_bits(stored, vector)


async def test_a_vector_parameter_round_trips_in_a_memory_transaction(
    db: Database, memory: str
) -> None:
    # The memory's schema comes first on the path there; the type is pgvector's all the same.
    vector = _hard_floats()
    async with db.memory_transaction(memory) as conn:
        _same_bits(await conn.fetchval("SELECT $1::vector", vector), vector)


async def test_connections_opened_before_pgvector_was_installed_get_its_codec(
    fresh_database: str,
) -> None:
    vector = _hard_floats()
    database = await Database.connect(fresh_database, min_size=2, max_size=2)
    try:
        async with database.connection() as conn:
            assert not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')"
            )
        await Migrations().migrate_shared(database)
        # Both of the pool's connections at once: each was opened without the extension.
        async with database.connection() as first, database.connection() as second:
            for conn in (first, second):
                _same_bits(await conn.fetchval("SELECT $1::vector", vector), vector)
    finally:
        await database.close()
