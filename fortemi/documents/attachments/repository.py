"""All SQL on ``blob``, ``attachment`` and ``attachment_chunk``.

Every method takes a connection inside ``Database.memory_transaction``. The note's
``attachment_text`` (what lexical search reads of its attachments) is kept by triggers
(migration 0011) from the attachment rows written here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from fortemi.documents.attachments.models import Attachment
from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = ["ATTACHMENT", "AttachmentRepository", "NewChunk"]


def _metadata(value: Any) -> dict[str, Any]:
    return dict(value)  # the pool's codec has decoded the jsonb


ATTACHMENT = Table("attachment", Attachment, convert={"extraction_metadata": _metadata})

# Inserted or, when known, locked (DO UPDATE locks the row): a sweep, which takes orphan
# blobs FOR UPDATE SKIP LOCKED, then skips it, or has finished with it before this runs.
_INSERT_BLOB = Query("""
INSERT INTO blob (digest, size) VALUES (:digest, :size)
ON CONFLICT (digest) DO UPDATE SET size = EXCLUDED.size
""")
_INSERT = ATTACHMENT.query("""
INSERT INTO attachment (id, note_id, blob_digest, filename, size, mime_declared, mime_detected,
    document_type, detection_method, detection_confidence, extraction_status, extraction_reason,
    extracted_from, created_by)
VALUES (:id, :note_id, :digest, :filename, :size, :mime_declared, :mime_detected,
    :document_type, :method, :confidence, :status, :reason, :extracted_from, :actor)
RETURNING {columns}
""")
_GET = ATTACHMENT.query("SELECT {columns} FROM attachment WHERE id = :id")
_FOR_NOTE = ATTACHMENT.query("""
SELECT {columns} FROM attachment WHERE note_id = :note_id ORDER BY created_at, id
""")
_TEXT = Query("SELECT extracted_text FROM attachment WHERE id = :id")
_PENDING = Query("""
SELECT EXISTS (SELECT 1 FROM attachment WHERE note_id = :note_id AND extraction_status = 'pending')
""")
_RESULT = ATTACHMENT.query("""
UPDATE attachment
SET extraction_status = :status, extraction_reason = :reason,
    extraction_metadata = :metadata::jsonb, preview = :preview, extracted_text = :text,
    extracted_at = clock_timestamp()
WHERE id = :id
RETURNING {columns}
""")
_DELETE_CHUNKS = Query("DELETE FROM attachment_chunk WHERE attachment_id = :id")
_INSERT_CHUNKS = Query("""
INSERT INTO attachment_chunk (attachment_id, ordinal, text, start_offset, end_offset, heading)
SELECT :id, c.ordinal, c.text, c.start_offset, c.end_offset, c.heading
FROM unnest(:ordinals::int[], :texts::text[], :starts::int[], :ends::int[], :headings::text[])
    AS c(ordinal, text, start_offset, end_offset, heading)
""")
# A live note's attachment chunks, in the order the note's attachment text has them.
_NOTE_CHUNKS = Query("""
SELECT c.text, c.heading, a.filename
FROM attachment a JOIN attachment_chunk c ON c.attachment_id = a.id
WHERE a.note_id = :note_id AND a.extraction_status = 'done' AND a.deleted_at IS NULL
ORDER BY a.created_at, a.id, c.ordinal
LIMIT :limit
""")
_DELETE = Query("DELETE FROM attachment WHERE id = :id RETURNING blob_digest")
# Blobs no attachment names any more, locked: an attach of the same bytes (which locks the
# blob row before it looks for the bytes) waits for the sweep; one holding the row already
# is skipped.
_ORPHANS = Query("""
SELECT b.digest FROM blob b
WHERE NOT EXISTS (SELECT 1 FROM attachment a WHERE a.blob_digest = b.digest)
FOR UPDATE SKIP LOCKED
""")
_DROP_BLOBS = Query("DELETE FROM blob WHERE digest = ANY(:digests::text[])")
_REFERENCES = Query("SELECT count(*) FROM attachment WHERE blob_digest = :digest")


class NewChunk:
    __slots__ = ("end", "heading", "ordinal", "start", "text")

    def __init__(self, ordinal: int, text: str, start: int, end: int, heading: str | None) -> None:
        self.ordinal, self.text, self.start, self.end, self.heading = (
            ordinal,
            text,
            start,
            end,
            heading,
        )


class AttachmentRepository:
    async def add_blob(self, conn: Connection, digest: str, size: int) -> None:
        await conn.execute(_INSERT_BLOB.sql, *_INSERT_BLOB.args(digest=digest, size=size))

    async def insert(self, conn: Connection, **values: Any) -> Attachment:
        row = await conn.fetchrow(_INSERT.sql, *_INSERT.args(values))
        if row is None:  # INSERT ... RETURNING always returns the row it wrote
            raise RuntimeError("INSERT INTO attachment returned no row")
        return ATTACHMENT.from_record(row)

    async def get(self, conn: Connection, attachment_id: UUID) -> Attachment | None:
        row = await conn.fetchrow(_GET.sql, *_GET.args(id=attachment_id))
        return None if row is None else ATTACHMENT.from_record(row)

    async def for_note(self, conn: Connection, note_id: UUID) -> list[Attachment]:
        rows = await conn.fetch(_FOR_NOTE.sql, *_FOR_NOTE.args(note_id=note_id))
        return [ATTACHMENT.from_record(r) for r in rows]

    async def text(self, conn: Connection, attachment_id: UUID) -> str | None:
        value: str | None = await conn.fetchval(_TEXT.sql, *_TEXT.args(id=attachment_id))
        return value

    async def has_pending(self, conn: Connection, note_id: UUID) -> bool:
        return bool(await conn.fetchval(_PENDING.sql, *_PENDING.args(note_id=note_id)))

    async def record_result(
        self,
        conn: Connection,
        attachment_id: UUID,
        *,
        status: str,
        reason: str | None,
        metadata: dict[str, Any],
        preview: str | None,
        text: str | None,
    ) -> Attachment | None:
        args = _RESULT.args(
            id=attachment_id,
            status=status,
            reason=reason,
            # Anything JSON cannot hold as is (a datetime in EXIF) is kept as its text.
            metadata=json.loads(json.dumps(metadata, default=str)),
            preview=preview,
            text=text,
        )
        row = await conn.fetchrow(_RESULT.sql, *args)
        return None if row is None else ATTACHMENT.from_record(row)

    async def replace_chunks(
        self, conn: Connection, attachment_id: UUID, chunks: Sequence[NewChunk]
    ) -> None:
        await conn.execute(_DELETE_CHUNKS.sql, *_DELETE_CHUNKS.args(id=attachment_id))
        if not chunks:
            return
        args = _INSERT_CHUNKS.args(
            id=attachment_id,
            ordinals=[c.ordinal for c in chunks],
            texts=[c.text for c in chunks],
            starts=[c.start for c in chunks],
            ends=[c.end for c in chunks],
            headings=[c.heading for c in chunks],
        )
        await conn.execute(_INSERT_CHUNKS.sql, *args)

    async def note_chunks(
        self, conn: Connection, note_id: UUID, limit: int
    ) -> list[tuple[str, str | None, str]]:
        """(text, heading, filename) of the note's attachment chunks, at most ``limit``."""
        rows = await conn.fetch(_NOTE_CHUNKS.sql, *_NOTE_CHUNKS.args(note_id=note_id, limit=limit))
        return [(r["text"], r["heading"], r["filename"]) for r in rows]

    async def delete(self, conn: Connection, attachment_id: UUID) -> str | None:
        digest: str | None = await conn.fetchval(_DELETE.sql, *_DELETE.args(id=attachment_id))
        return digest

    async def lock_orphans(self, conn: Connection) -> list[str]:
        """The digests of blobs no attachment names, their rows locked."""
        return [r["digest"] for r in await conn.fetch(_ORPHANS.sql)]

    async def drop_blobs(self, conn: Connection, digests: list[str]) -> None:
        await conn.execute(_DROP_BLOBS.sql, *_DROP_BLOBS.args(digests=digests))

    async def references(self, conn: Connection, digest: str) -> int:
        count: int = await conn.fetchval(_REFERENCES.sql, *_REFERENCES.args(digest=digest))
        return count
