"""Export → import into an empty memory → export again gives the same shard (apart from
its created_at and producer), on a memory with every kind of data a shard carries."""

from __future__ import annotations

from pathlib import Path

from fortemi.documents.shards import ImportOptions, ShardService
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteService
from tests.integration.documents.shards.helpers import (
    carried_tables,
    populate,
    read_members,
    table_counts,
)


async def test_full_shard_round_trips_every_table_unchanged(
    db: Database, shards: ShardService, notes: NoteService, memory: str, target: str, tmp_path: Path
) -> None:
    await populate(db, notes, memory)
    before = await table_counts(db, memory)
    assert all(before[t] > 0 for t in carried_tables()), before  # every kind of data present
    first, second = tmp_path / "first.shard", tmp_path / "second.shard"
    with first.open("wb") as sink:
        exported = await shards.export(memory, sink, profile="full-v1")

    report = await shards.import_(target, first, ImportOptions())

    assert report.written == {t: before[t] for t in carried_tables()}
    assert await table_counts(db, target) == before  # the lexical index is rebuilt too
    with second.open("wb") as sink:
        again = await shards.export(target, sink, profile="full-v1")
    assert [c.model_dump() for c in again.components] == [
        c.model_dump() for c in exported.components
    ]
    assert again.loss == exported.loss
    one, two = read_members(first), read_members(second)
    assert {k: v for k, v in one.items() if k != "manifest.json"} == {
        k: v for k, v in two.items() if k != "manifest.json"
    }


async def test_imported_identity_sequences_continue_past_imported_ids(
    db: Database, shards: ShardService, notes: NoteService, memory: str, target: str, tmp_path: Path
) -> None:
    await populate(db, notes, memory)
    path = tmp_path / "s.shard"
    with path.open("wb") as sink:
        await shards.export(memory, sink)
    await shards.import_(target, path, ImportOptions())
    async with db.memory_transaction(target) as conn:
        top = await conn.fetchval("SELECT max(id) FROM graph_snapshot")
        made = await conn.fetchval(
            "INSERT INTO graph_snapshot (steps, metrics) VALUES ('{}', '{}') RETURNING id"
        )
    assert made > top


async def test_core_profile_carries_notes_and_links_and_names_what_it_leaves_out(
    db: Database, shards: ShardService, notes: NoteService, memory: str, target: str, tmp_path: Path
) -> None:
    ids = await populate(db, notes, memory)
    path = tmp_path / "core.shard"
    with path.open("wb") as sink:
        manifest = await shards.export(memory, sink, profile="core-v1")

    assert [c.name for c in manifest.components] == ["notes", "links", "attachments"]
    loss = {(e.code, e.table): e.rows for e in manifest.loss}
    assert loss[("source-identity-outside-profile", "note")] == 1
    assert loss[("link-embedding-set-outside-profile", "note_link")] == 1
    assert loss[("versions-outside-profile", "note_version")] == 5
    assert ("vocabulary-outside-profile", "concept") in loss
    await shards.import_(target, path, ImportOptions())
    async with db.memory_transaction(target) as conn:
        gone = await conn.fetchrow(
            "SELECT deleted_at, created_at FROM note WHERE id = $1", ids["gone"]
        )
        external = await conn.fetchval("SELECT external_id FROM note WHERE id = $1", ids["c"])
        versions = await conn.fetchval("SELECT count(*) FROM note_version")
    async with db.memory_transaction(memory) as conn:
        source = await conn.fetchrow(
            "SELECT deleted_at, created_at FROM note WHERE id = $1", ids["gone"]
        )
    assert gone == source  # tombstone and times kept
    assert gone is not None
    assert gone["deleted_at"] is not None
    assert external is None
    assert versions == 0


async def test_imported_embedding_sets_get_their_vector_index(
    db: Database, shards: ShardService, notes: NoteService, memory: str, target: str, tmp_path: Path
) -> None:
    await populate(db, notes, memory)
    path = tmp_path / "s.shard"
    with path.open("wb") as sink:
        await shards.export(memory, sink)
    await shards.import_(target, path, ImportOptions())
    async with db.memory_transaction(target) as conn:
        set_id = await conn.fetchval("SELECT id FROM embedding_set")
        index = await conn.fetchval(
            "SELECT to_regclass($1)::text", f"chunk_embedding_hnsw_{set_id}"
        )
    assert index == f"chunk_embedding_hnsw_{set_id}"
