"""The S3 blob store against an S3 API double over a real socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import blake3
import boto3
import pytest

from fortemi.documents.attachments.storage import S3BlobStore, build_blob_store
from fortemi.documents.service import DocumentTypeService
from fortemi.platform.database import Database
from fortemi.platform.errors import NotFound
from fortemi.platform.notes import NoteService
from fortemi.platform.settings import Settings
from tests.integration.documents.conftest import Upload, make_service
from tests.support.s3_double import S3Double, s3_double

BUCKET = "fortemi-test"


@pytest.fixture(scope="module")
def double() -> Iterator[S3Double]:
    with s3_double() as running:
        yield running


@pytest.fixture
def s3_store(double: S3Double, settings: Settings) -> S3BlobStore:
    configured = settings.model_copy(
        update={
            "blob_store": "s3",
            "s3_bucket": BUCKET,
            "s3_prefix": "blobs",
            "s3_endpoint_url": double.endpoint_url,
            "s3_region": double.region,
            "s3_access_key_id": _secret(double.access_key_id),
            "s3_secret_access_key": _secret(double.secret_access_key),
        }
    )
    store = build_blob_store(configured)
    assert isinstance(store, S3BlobStore)
    client = boto3.client(
        "s3",
        endpoint_url=double.endpoint_url,
        region_name=double.region,
        aws_access_key_id=double.access_key_id,
        aws_secret_access_key=double.secret_access_key,
    )
    existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
    if BUCKET not in existing:
        client.create_bucket(Bucket=BUCKET)
    return store


def _secret(value: str) -> object:
    from pydantic import SecretStr

    return SecretStr(value)


async def _read(store: S3BlobStore, memory: str, digest: str) -> bytes:
    return b"".join([chunk async for chunk in store.read(memory, digest)])


async def test_s3_store_keeps_reads_and_deletes_a_blob(
    s3_store: S3BlobStore, tmp_path: Path
) -> None:
    data = bytes(range(256)) * 9000  # over two read chunks
    digest = blake3.blake3(data).hexdigest()
    staged = tmp_path / "staged"
    staged.write_bytes(data)
    assert not await s3_store.exists("m1", digest)
    await s3_store.put("m1", digest, staged)
    assert not staged.exists()
    assert await s3_store.exists("m1", digest)
    assert not await s3_store.exists("m2", digest)  # memories never share a blob
    assert await _read(s3_store, "m1", digest) == data
    assert await s3_store.read_all("m1", digest, 10) == data[:11]
    await s3_store.delete("m1", digest)
    assert not await s3_store.exists("m1", digest)
    with pytest.raises(NotFound):
        await _read(s3_store, "m1", digest)


async def test_attachments_round_trip_through_the_s3_store(
    s3_store: S3BlobStore,
    settings: Settings,
    db: Database,
    documents: DocumentTypeService,
    notes: NoteService,
    memory: str,
    note_id: UUID,
    tmp_path: Path,
) -> None:
    service = make_service(settings, db, s3_store, documents, notes, tmp_path / "staging")
    data = b"offsite copy\n" * 500
    first = await service.attach(
        memory, note_id, Upload(data), filename="a.txt", declared_mime=None, actor="t"
    )
    second = await service.attach(
        memory, note_id, Upload(data), filename="b.txt", declared_mime=None, actor="t"
    )
    assert first.blob_digest == second.blob_digest
    assert b"".join([c async for c in service.content(memory, first)]) == data
    await service.delete(memory, first.id)
    assert await s3_store.exists(memory, first.blob_digest)  # still the second's
    await service.delete(memory, second.id)
    assert not await s3_store.exists(memory, first.blob_digest)
    assert list((tmp_path / "staging").iterdir()) == []


async def test_deleting_a_memory_s_blobs_leaves_other_memories_alone(
    s3_store: S3BlobStore, tmp_path: Path
) -> None:
    digests = []
    for memory, data in (("m3", b"one"), ("m3", b"two"), ("m4", b"one")):
        digest = blake3.blake3(data).hexdigest()
        staged = tmp_path / f"{memory}-{digest}"
        staged.write_bytes(data)
        await s3_store.put(memory, digest, staged)
        digests.append(digest)
    await s3_store.delete_memory("m3")
    assert not await s3_store.exists("m3", digests[0])
    assert not await s3_store.exists("m3", digests[1])
    assert await s3_store.exists("m4", digests[2])
