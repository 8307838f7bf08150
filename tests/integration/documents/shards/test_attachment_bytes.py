"""Attachment bytes travel in shards: uploaded through the attachment service, exported,
imported into an empty memory, downloaded unchanged; a shard whose bytes are missing or
altered is refused before any row is written."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import blake3
import pytest

from fortemi.documents.attachments.service import AttachmentService
from fortemi.documents.attachments.storage import LocalBlobStore
from fortemi.documents.service import DocumentTypeService
from fortemi.documents.shards import BlobBytes, ImportOptions, ShardService
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import NoteService
from fortemi.platform.settings import Settings
from tests.integration.documents.conftest import Upload, make_service
from tests.integration.documents.shards.helpers import (
    HELLO_DIGEST,
    populate,
    read_members,
    table_counts,
    write_members,
)

FILES = {
    "report.txt": b"quarterly figures, all of them\n" * 40,
    "blob.bin": bytes(range(256)) * 5000,  # past 1 MiB: more than one store chunk
    "copy.txt": b"quarterly figures, all of them\n" * 40,  # the same bytes: one blob
}


@pytest.fixture
def attachments(
    settings: Settings,
    db: Database,
    local_store: LocalBlobStore,
    documents: DocumentTypeService,
    notes: NoteService,
    tmp_path: Path,
) -> AttachmentService:
    # Uploads up to 4 MB: a blob larger than one store chunk travels too.
    return make_service(
        settings, db, local_store, documents, notes, tmp_path / "staging", 4_000_000
    )


async def _download(attachments: AttachmentService, memory: str, attachment_id: UUID) -> bytes:
    found = await attachments.get(memory, attachment_id)
    assert found is not None
    return b"".join([chunk async for chunk in attachments.content(memory, found)])


async def test_uploaded_bytes_round_trip_through_a_full_shard_into_an_empty_memory(
    shards: ShardService,
    attachments: AttachmentService,
    note_id: UUID,
    memory: str,
    target: str,
    tmp_path: Path,
) -> None:
    made = {
        name: await attachments.attach(
            memory, note_id, Upload(data), filename=name, declared_mime=None, actor="test"
        )
        for name, data in FILES.items()
    }
    path = tmp_path / "full.shard"
    with path.open("wb") as sink:
        manifest = await shards.export(memory, sink, profile="full-v1")

    assert manifest.blobs is not None
    assert manifest.blobs.count == 2  # deduplicated by digest
    assert manifest.blobs.bytes == len(FILES["report.txt"]) + len(FILES["blob.bin"])
    assert manifest.min_reader_version == 2
    assert not [e for e in manifest.loss if e.code.startswith("attachment-bytes")]
    members = read_members(path)
    for name, data in FILES.items():
        assert members[f"blobs/{blake3.blake3(data).hexdigest()}"] == data, name

    report = await shards.import_(target, path, ImportOptions())

    assert report.written["attachment"] == 3
    for name, data in FILES.items():
        assert await _download(attachments, target, made[name].id) == data


async def test_core_profile_names_the_bytes_it_leaves_out_and_carries_them_when_asked(
    db: Database,
    shards: ShardService,
    notes: NoteService,
    blob_bytes: BlobBytes,
    memory: str,
    target: str,
    tmp_path: Path,
) -> None:
    await populate(db, notes, memory, blob_bytes)
    without, with_bytes = tmp_path / "core.shard", tmp_path / "core-bytes.shard"
    with without.open("wb") as sink:
        bare = await shards.export(memory, sink, profile="core-v1")
    with with_bytes.open("wb") as sink:
        carried = await shards.export(memory, sink, profile="core-v1", attachment_bytes=True)

    loss = {(e.code, e.table): e.rows for e in bare.loss}
    assert loss[("attachment-bytes-outside-profile", "blob")] == 1
    assert bare.blobs is None
    assert not [n for n in read_members(without) if n.startswith("blobs/")]
    assert carried.blobs is not None
    assert carried.blobs.count == 1
    assert ("attachment-bytes-outside-profile", "blob") not in {
        (e.code, e.table) for e in carried.loss
    }
    before = await table_counts(db, target)
    with pytest.raises(BadUserInput) as caught:
        await shards.import_(target, without, ImportOptions())
    assert caught.value.extensions["reason"] == "shard_missing_blob"
    assert await table_counts(db, target) == before

    await shards.import_(target, with_bytes, ImportOptions())
    assert await blob_bytes.store.read_all(target, HELLO_DIGEST, 100) == b"hello"


@pytest.fixture
async def full_shard(
    db: Database,
    shards: ShardService,
    notes: NoteService,
    blob_bytes: BlobBytes,
    memory: str,
    tmp_path: Path,
) -> Path:
    await populate(db, notes, memory, blob_bytes)
    path = tmp_path / "full.shard"
    with path.open("wb") as sink:
        await shards.export(memory, sink, profile="full-v1")
    return path


async def _refused_reason(
    db: Database, shards: ShardService, blob_bytes: BlobBytes, target: str, path: Path
) -> str:
    before = await table_counts(db, target)
    with pytest.raises(BadUserInput) as caught:
        await shards.import_(target, path, ImportOptions())
    assert await table_counts(db, target) == before  # zero rows written
    assert not await blob_bytes.store.exists(target, HELLO_DIGEST)  # and no bytes
    return str(caught.value.extensions["reason"])


async def test_a_missing_blob_member_is_refused_and_writes_nothing(
    db: Database,
    shards: ShardService,
    blob_bytes: BlobBytes,
    full_shard: Path,
    target: str,
    tmp_path: Path,
) -> None:
    members = read_members(full_shard)
    del members[f"blobs/{HELLO_DIGEST}"]
    forged = tmp_path / "no-bytes.shard"
    write_members(forged, members)  # the manifest resealed: it lists no blob

    assert await _refused_reason(db, shards, blob_bytes, target, forged) == "shard_missing_blob"


async def test_a_blob_whose_bytes_do_not_hash_to_its_name_is_refused_and_writes_nothing(
    db: Database,
    shards: ShardService,
    blob_bytes: BlobBytes,
    full_shard: Path,
    target: str,
    tmp_path: Path,
) -> None:
    members = read_members(full_shard)
    members[f"blobs/{HELLO_DIGEST}"] = b"jello"  # same size, other bytes
    forged = tmp_path / "altered.shard"
    write_members(forged, members)

    reason = await _refused_reason(db, shards, blob_bytes, target, forged)
    assert reason == "shard_checksum_mismatch"


async def test_a_blob_member_the_manifest_does_not_count_is_refused_and_writes_nothing(
    db: Database,
    shards: ShardService,
    blob_bytes: BlobBytes,
    full_shard: Path,
    target: str,
    tmp_path: Path,
) -> None:
    members = read_members(full_shard)
    members["blobs/" + "0" * 64] = b"stowaway"
    forged = tmp_path / "extra.shard"
    write_members(forged, members, reseal=False)

    assert await _refused_reason(db, shards, blob_bytes, target, forged) == "shard_unsafe_member"


async def test_bytes_of_an_import_that_fails_after_publishing_them_are_swept_as_orphans(
    db: Database,
    blob_bytes: BlobBytes,
    attachments: AttachmentService,
    full_shard: Path,
    target: str,
) -> None:
    async def fails(_: Connection) -> None:
        raise RuntimeError("the import's last step fails")

    failing = ShardService(db, blob_bytes, after_import=[fails])
    before = await table_counts(db, target)

    with pytest.raises(RuntimeError, match="last step"):
        await failing.import_(target, full_shard, ImportOptions())

    after = await table_counts(db, target)
    assert {t: n for t, n in after.items() if t != "blob"} == {
        t: n for t, n in before.items() if t != "blob"
    }  # every row rolled back
    assert after["blob"] == before["blob"] + 1  # but the published bytes are named
    assert await blob_bytes.store.exists(target, HELLO_DIGEST)
    assert await attachments.sweep(target) == [HELLO_DIGEST]
    assert not await blob_bytes.store.exists(target, HELLO_DIGEST)
    assert await table_counts(db, target) == before
