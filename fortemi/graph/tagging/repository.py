"""Tagging's own SQL: ``note_tagged``, the version of each note the ``ConceptTagging``
chain last finished on (its concepts are the vocabulary's, written through its service).
Every method runs in the caller's memory transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = ["NOTE_TAGGED", "NoteTagged", "TaggedRepository"]


@dataclass(frozen=True, slots=True)
class NoteTagged:
    note_id: UUID
    version: int


NOTE_TAGGED = Table("note_tagged", NoteTagged)

# A chain that finished on an older version never moves the mark back (two chains of one
# note may finish out of order: a retried job, a sweep's job beside an edit's); a note
# purged meanwhile is not marked (the foreign key would refuse it).
_MARK = Query(
    """
    INSERT INTO note_tagged (note_id, version)
    SELECT id, :version FROM note WHERE id = :note_id
    ON CONFLICT (note_id) DO UPDATE SET version = excluded.version, tagged_at = now()
    WHERE note_tagged.version < excluded.version
    """
)
# Live notes whose latest version no chain has finished on, in id order after ``after``
# (keyset: a sweep resumes where its last page ended). The mark's primary key and the
# note's make this a merge of two index scans.
_UNTAGGED = Query(
    """
    SELECT n.id FROM note n
    LEFT JOIN note_tagged t ON t.note_id = n.id
    WHERE n.deleted_at IS NULL AND n.id > :after
      AND (t.note_id IS NULL OR t.version < n.version)
    ORDER BY n.id
    LIMIT :limit
    """
)


class TaggedRepository:
    async def mark(self, conn: Connection, note_id: UUID, version: int) -> None:
        """Record that a chain finished on ``version`` of the note."""
        await conn.execute(_MARK.sql, *_MARK.args(note_id=note_id, version=version))

    async def untagged(self, conn: Connection, after: UUID, limit: int) -> Sequence[UUID]:
        """Up to ``limit`` live notes after ``after`` (by id) whose latest version has no
        finished chain."""
        rows = await conn.fetch(_UNTAGGED.sql, *_UNTAGGED.args(after=after, limit=limit))
        return [row["id"] for row in rows]
