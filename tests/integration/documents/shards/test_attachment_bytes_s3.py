"""Attachment bytes travel through shards from and into an S3 blob store (the S3 API
double over a real socket), streamed chunk by chunk both ways."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import blake3

from fortemi.documents.attachments.storage import S3BlobStore
from fortemi.documents.service import DocumentTypeService
from fortemi.documents.shards import BlobBytes, ImportOptions, ShardService
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteService
from fortemi.platform.settings import Settings
from tests.integration.documents.conftest import Upload, make_service
from tests.integration.documents.shards.helpers import read_members
from tests.integration.documents.test_s3_store import double, s3_store  # noqa: F401 - fixtures

LARGE = bytes(range(256)) * 9000  # past two 1 MiB chunks


async def test_bytes_in_an_s3_store_round_trip_through_a_full_shard(
    settings: Settings,
    db: Database,
    s3_store: S3BlobStore,  # noqa: F811 - the fixture imported above
    documents: DocumentTypeService,
    notes: NoteService,
    note_id: UUID,
    memory: str,
    target: str,
    tmp_path: Path,
) -> None:
    attachments = make_service(
        settings, db, s3_store, documents, notes, tmp_path / "staging", 4_000_000
    )
    await attachments.attach(
        memory, note_id, Upload(LARGE), filename="large.bin", declared_mime=None, actor="t"
    )
    shards = ShardService(db, BlobBytes(s3_store, tmp_path / "staging"))
    path = tmp_path / "s3.shard"
    with path.open("wb") as sink:
        manifest = await shards.export(memory, sink, profile="full-v1")
    digest = blake3.blake3(LARGE).hexdigest()

    assert manifest.blobs is not None
    assert (manifest.blobs.count, manifest.blobs.bytes) == (1, len(LARGE))
    assert read_members(path)[f"blobs/{digest}"] == LARGE
    assert not await s3_store.exists(target, digest)

    await shards.import_(target, path, ImportOptions())

    assert await s3_store.read_all(target, digest, len(LARGE)) == LARGE
