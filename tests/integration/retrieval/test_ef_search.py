"""The HNSW candidate list grows with the embedding set, unless the client sets it."""

from __future__ import annotations

import asyncio

from fortemi.platform.database import Database
from fortemi.retrieval.search import SearchMode
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSets, default_ef_search
from tests.integration.retrieval.conftest import Index, Search, Write

_BULK = 12_000  # past 10,000 vectors the default grows above the 150 of limit 10
_BULK_NOTES = 60  # more than the 50 notes a search of limit 10 wants


async def test_the_default_ef_search_follows_the_size_of_the_embedding_set(
    write: Write, index: Index, find: Search, db: Database, memory: str
) -> None:
    note = await write("Sleepy", "The kitten curled up on the windowsill and purred.")
    await index(note)
    small = await find("a sleepy cat", mode=SearchMode.SEMANTIC)
    assert small.hits[0].note_id == note
    # A set small beside the chunks a search takes is read exactly: no index search.
    assert small.semantic_path == "scan"
    assert small.ef_search is None
    asked = await find("a sleepy cat", mode=SearchMode.SEMANTIC, ef_search=40)
    assert asked.semantic_path == "hnsw"  # the client asked for the index
    # Never fewer candidates than chunks taken: limit 10 takes 50 notes, 1.25 to 3 chunks
    # each.
    assert asked.ef_search is not None
    assert 63 <= asked.ef_search <= 150
    assert asked.hits[0].note_id == note
    asked = await find("a sleepy cat", mode=SearchMode.SEMANTIC, ef_search=700)
    assert asked.ef_search == 700  # the client's choice stands

    # The memory grows past 10,000 vectors (here in a second set, as while a new model
    # re-embeds a memory; the estimate counts every set of the memory), over more notes
    # than a search wants (with fewer, it would take all their chunks in one scan).
    bulk = [await write(f"Bulk {i}", "many chunks") for i in range(_BULK_NOTES)]
    async with db.memory_transaction(memory) as conn:
        other = await EmbeddingSets().ensure(conn, "bulk-test-model", 4, DocumentComposition())
        await conn.execute(
            "INSERT INTO chunk (note_id, ordinal, text, start_offset, end_offset, content_hash) "
            "SELECT n, g, 'x', 0, 1, 'h' "
            "FROM unnest($1::uuid[]) AS n, generate_series(1, $2::int) AS g",
            bulk,
            _BULK // _BULK_NOTES,
        )
        await conn.execute(
            "INSERT INTO chunk_embedding (set_id, chunk_id, note_id, text_hash, embedding) "
            # Spread vectors: near-parallel ones make every HNSW insert search a long way.
            "SELECT $1, id, note_id, 'h', "
            "ARRAY[random() - 0.5, random() - 0.5, random() - 0.5, 1]::real[]::vector "
            "FROM chunk WHERE note_id = ANY($2::uuid[])",
            other.id,
            bulk,
        )
    expected = default_ef_search(_BULK + 1)
    assert expected > 150
    # Statistics reach other sessions within seconds of the commit, and the service
    # re-reads a set's size every few seconds: poll, with a generous bound.
    grown = None
    for _ in range(240):
        grown = await find("a sleepy cat", mode=SearchMode.SEMANTIC)
        if grown.ef_search is not None and grown.ef_search > 150:
            break
        await asyncio.sleep(0.5)
    assert grown is not None
    assert grown.ef_search is not None
    assert expected <= grown.ef_search <= default_ef_search(_BULK + 10)
    assert grown.hits[0].note_id == note  # the same answer, from a longer candidate list
