"""Blob rows and bytes stay in step through attaches, deletes and sweeps."""

from __future__ import annotations

from uuid import UUID

from fortemi.documents.attachments.service import AttachmentService
from fortemi.platform.database import Database
from tests.integration.documents.conftest import Upload


async def test_an_attach_stores_bytes_a_failed_sweep_left_missing(
    attachments: AttachmentService, db: Database, memory: str, note_id: UUID
) -> None:
    data = b"bytes whose row outlived them"
    first = await attachments.attach(
        memory, note_id, Upload(data), filename="a.txt", declared_mime=None, actor="t"
    )
    # A sweep removed the bytes, then its transaction failed: the blob row stayed.
    async with db.memory_transaction(memory) as conn:
        await conn.execute("DELETE FROM attachment WHERE id = $1", first.id)
    await attachments.store.delete(memory, first.blob_digest)
    again = await attachments.attach(
        memory, note_id, Upload(data), filename="b.txt", declared_mime=None, actor="t"
    )
    assert again.blob_digest == first.blob_digest
    assert b"".join([c async for c in attachments.content(memory, again)]) == data


async def test_a_sweep_keeps_referenced_blobs_and_removes_the_rest(
    attachments: AttachmentService, db: Database, memory: str, note_id: UUID
) -> None:
    kept = await attachments.attach(
        memory, note_id, Upload(b"kept"), filename="k.txt", declared_mime=None, actor="t"
    )
    gone = await attachments.attach(
        memory, note_id, Upload(b"gone"), filename="g.txt", declared_mime=None, actor="t"
    )
    async with db.memory_transaction(memory) as conn:
        await conn.execute("DELETE FROM attachment WHERE id = $1", gone.id)
    assert await attachments.sweep(memory) == [gone.blob_digest]
    assert not await attachments.store.exists(memory, gone.blob_digest)
    assert await attachments.store.exists(memory, kept.blob_digest)
    assert await attachments.sweep(memory) == []
