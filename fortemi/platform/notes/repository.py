"""All SQL for notes, their originals and their versions.

Every method takes a connection inside ``Database.memory_transaction`` (the search path is
the memory's schema, so table names are unqualified). Values always travel as ``$n``
parameters. Query text is spliced only from this module's constants (the column list) and,
for filters, from fixed fragments; those lines carry ``noqa: S608`` for that reason.

Writes that span tables are single statements with data-modifying CTEs: the note, its
version row (and, on insert, its original) are written in one round trip, and the version
row is stamped with the note's own ``updated_at`` so history and note agree exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from fortemi.platform.database import Connection
from fortemi.platform.notes.models import (
    Note,
    NoteDraft,
    NoteFilter,
    NoteVersion,
    NoteVisibility,
)
from fortemi.platform.sql import Where

__all__ = ["NoteInsert", "NoteRepository", "NoteWrite", "note_filter_where"]

_COLUMNS = (
    "id, title, content, format, source, metadata, tags, collection, project, skill, starred, "
    "archived, version, content_hash, external_source, external_id, created_at, updated_at, "
    "deleted_at"
)
_VERSION_COLUMNS = (
    "note_id, version, title, content, format, metadata, tags, content_hash, created_at, created_by"
)

_GET = f"SELECT {_COLUMNS} FROM note WHERE id = $1"  # noqa: S608 - constants only

_GET_MANY = f"SELECT {_COLUMNS} FROM note WHERE id = ANY($1::uuid[])"  # noqa: S608

# One clock reading per row (clock_timestamp, not now()) so notes created in one batch keep
# their order; created_at = updated_at for a new note.
_INSERT = f"""
WITH t AS (SELECT clock_timestamp() AS at),
n AS (
    INSERT INTO note (id, title, content, format, source, metadata, tags, collection, project,
                      starred, archived, version, content_hash, external_source, external_id,
                      created_at, updated_at, created_by, updated_by, skill)
    SELECT $1::uuid, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::text[], $8::text,
           $9::text, $10::boolean, $11::boolean, 1, $12::text, $13::text, $14::text,
           t.at, t.at, $15::text, $15::text, $16::text
    FROM t
    RETURNING *
),
o AS (
    INSERT INTO note_original (note_id, content, content_hash, created_at)
    SELECT id, content, content_hash, created_at FROM n
),
v AS (
    INSERT INTO note_version ({_VERSION_COLUMNS})
    SELECT id, version, title, content, format, metadata, tags, content_hash, created_at,
           created_by
    FROM n
)
SELECT {_COLUMNS} FROM n
"""  # noqa: S608

# $14 says whether the versioned fields changed: only then is a version row written (the
# caller has already set $11 to the next version number under a row lock).
_WRITE = f"""
WITH t AS (SELECT clock_timestamp() AS at),
n AS (
    UPDATE note
    SET title = $2::text, content = $3::text, format = $4::text, metadata = $5::jsonb,
        tags = $6::text[], collection = $7::text, project = $8::text, starred = $9::boolean,
        archived = $10::boolean, version = $11::integer, content_hash = $12::text,
        updated_at = t.at, updated_by = $13::text, skill = $15::text
    FROM t
    WHERE note.id = $1::uuid
    RETURNING note.*
),
v AS (
    INSERT INTO note_version ({_VERSION_COLUMNS})
    SELECT id, version, title, content, format, metadata, tags, content_hash, updated_at,
           updated_by
    FROM n
    WHERE $14::boolean
)
SELECT {_COLUMNS} FROM n
"""  # noqa: S608

# Only a live note is deleted and only a deleted one restored, so repeating either is a
# no-op that leaves deleted_at (and updated_at) as they were.
_SOFT_DELETE = f"""
WITH t AS (SELECT clock_timestamp() AS at)
UPDATE note SET deleted_at = t.at, updated_at = t.at, updated_by = $2
FROM t
WHERE note.id = $1 AND note.deleted_at IS NULL
RETURNING {_COLUMNS}
"""  # noqa: S608

_PURGE = f"""
DELETE FROM note WHERE id = $1 AND deleted_at IS NOT NULL RETURNING {_COLUMNS}
"""  # noqa: S608

_RESTORE = f"""
UPDATE note SET deleted_at = NULL, updated_at = clock_timestamp(), updated_by = $2
WHERE id = $1 AND deleted_at IS NOT NULL
RETURNING {_COLUMNS}
"""  # noqa: S608

_VERSIONS = f"SELECT {_VERSION_COLUMNS} FROM note_version WHERE note_id = $1 ORDER BY version"  # noqa: S608

_VERSION = f"SELECT {_VERSION_COLUMNS} FROM note_version WHERE note_id = $1 AND version = $2"  # noqa: S608

# Advisory locks, one per (memory schema, source, external id), taken in key order so two
# batches never wait on each other in a cycle. They serialise batches on the same ids even
# when the note does not exist yet, which a row lock cannot. The two-int4 key space is
# apart from the bigint one the migrations lock in; a hash collision only over-serialises.
_LOCK_EXTERNAL = """
SELECT pg_advisory_xact_lock(hashtext(current_schema()), k)
FROM (SELECT DISTINCT hashtext($1::text || chr(31) || x) AS k FROM unnest($2::text[]) AS x) AS keys
ORDER BY k
"""

_FIND_EXTERNAL = f"""
SELECT {_COLUMNS} FROM note
WHERE external_source = $1 AND external_id = ANY($2::text[])
ORDER BY id
FOR UPDATE
"""  # noqa: S608


@dataclass(frozen=True, slots=True)
class NoteInsert:
    """A new note's row; ``state`` is already validated."""

    id: UUID
    state: NoteDraft
    content_hash: str
    actor: str | None
    external_source: str | None = None
    external_id: str | None = None

    def args(self) -> tuple[Any, ...]:
        s = self.state
        return (
            self.id, s.title, s.content, s.format, s.source, s.metadata, list(s.tags),
            s.collection, s.project, s.starred, s.archived, self.content_hash,
            self.external_source, self.external_id, self.actor, s.skill,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class NoteWrite:
    """A locked note's next state; ``new_version`` when a versioned field changed."""

    id: UUID
    state: NoteDraft
    version: int
    content_hash: str
    new_version: bool
    actor: str | None

    def args(self) -> tuple[Any, ...]:
        s = self.state
        return (
            self.id, s.title, s.content, s.format, s.metadata, list(s.tags), s.collection,
            s.project, s.starred, s.archived, self.version, self.content_hash, self.actor,
            self.new_version, s.skill,
        )  # fmt: skip


def _note(row: asyncpg.Record) -> Note:
    return Note(
        id=row["id"],
        title=row["title"],
        content=row["content"],
        format=row["format"],
        source=row["source"],
        metadata=row["metadata"],
        tags=tuple(row["tags"]),
        collection=row["collection"],
        project=row["project"],
        skill=row["skill"],
        starred=row["starred"],
        archived=row["archived"],
        version=row["version"],
        content_hash=row["content_hash"],
        external_source=row["external_source"],
        external_id=row["external_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        deleted_at=row["deleted_at"],
    )


def _returned(row: asyncpg.Record | None) -> asyncpg.Record:
    """The row a write RETURNING a row returned; its absence is a bug, not bad input."""
    if row is None:
        raise RuntimeError("a note write returned no row; the note was locked and must exist")
    return row


def _version(row: asyncpg.Record) -> NoteVersion:
    return NoteVersion(
        note_id=row["note_id"],
        version=row["version"],
        title=row["title"],
        content=row["content"],
        format=row["format"],
        metadata=row["metadata"],
        tags=tuple(row["tags"]),
        content_hash=row["content_hash"],
        created_at=row["created_at"],
        created_by=row["created_by"],
    )


def _filter(note_filter: NoteFilter) -> Where:
    return note_filter_where(note_filter, Where())


def note_filter_where(note_filter: NoteFilter, where: Where) -> Where:
    """Add ``note_filter``'s conditions on the note table's columns (unqualified) to
    ``where``, after the parameters it holds already; returns it."""
    f = note_filter
    where.add("deleted_at IS NOT NULL" if f.deleted else "deleted_at IS NULL")
    if f.tags_all:
        where.add("tags @> {0}::text[]", list(f.tags_all))
    if f.tags_any:
        where.add("tags && {0}::text[]", list(f.tags_any))
    if f.tags_none:
        where.add("NOT (tags && {0}::text[])", list(f.tags_none))
    if f.projects is not None:
        where.add("project = ANY({0}::text[])", list(f.projects))
    for column in ("project", "skill", "collection", "source", "starred", "archived"):
        value = getattr(f, column)
        if value is not None:
            # ``column`` comes from the fixed tuple above, never from the caller.
            where.add(f"{column} = {{0}}", value)
    for column, op, value in (
        ("created_at", ">=", f.created_after),
        ("created_at", "<", f.created_before),
        ("updated_at", ">=", f.updated_after),
        ("updated_at", "<", f.updated_before),
    ):
        if value is not None:
            where.add(f"{column} {op} {{0}}::timestamptz", value)
    if f.visibility is not None:
        _visible(where, f.visibility)
    return where


def _visible(where: Where, visibility: NoteVisibility) -> None:
    """The caller's read scope as one predicate, applied before ordering and LIMIT."""
    projects, skills = visibility.projects, visibility.skills
    where.add(
        "(CASE WHEN skill IS NOT NULL THEN (skill = ANY({0}::text[])) = {1}"
        " WHEN project IS NOT NULL THEN (project = ANY({2}::text[])) = {3}"
        " ELSE {4}::boolean END)",
        sorted(skills.names),
        skills.only,
        sorted(projects.names),
        projects.only,
        visibility.memory_notes,
    )


class NoteRepository:
    async def get(self, conn: Connection, note_id: UUID, *, lock: bool = False) -> Note | None:
        # FOR UPDATE makes concurrent writers of one note queue up; each then reads the
        # state the previous one committed, so no update is lost.
        row = await conn.fetchrow(_GET + (" FOR UPDATE" if lock else ""), note_id)
        return _note(row) if row else None

    async def get_many(self, conn: Connection, note_ids: Sequence[UUID]) -> dict[UUID, Note]:
        rows = await conn.fetch(_GET_MANY, list(note_ids))
        return {row["id"]: _note(row) for row in rows}

    async def insert(self, conn: Connection, note: NoteInsert) -> Note:
        """Insert a note with its original and its version 1."""
        return _note(_returned(await conn.fetchrow(_INSERT, *note.args())))

    async def insert_many(self, conn: Connection, notes: Sequence[NoteInsert]) -> None:
        if notes:
            await conn.executemany(_INSERT, [note.args() for note in notes])

    async def write(self, conn: Connection, note: NoteWrite) -> Note:
        """Store the next state of a note the caller has locked."""
        return _note(_returned(await conn.fetchrow(_WRITE, *note.args())))

    async def write_many(self, conn: Connection, notes: Sequence[NoteWrite]) -> None:
        if notes:
            await conn.executemany(_WRITE, [note.args() for note in notes])

    async def soft_delete(self, conn: Connection, note_id: UUID, actor: str | None) -> Note | None:
        """The note, newly deleted; None when it is absent or already deleted."""
        row = await conn.fetchrow(_SOFT_DELETE, note_id, actor)
        return _note(row) if row else None

    async def restore(self, conn: Connection, note_id: UUID, actor: str | None) -> Note | None:
        """The note, newly restored; None when it is absent or not deleted."""
        row = await conn.fetchrow(_RESTORE, note_id, actor)
        return _note(row) if row else None

    async def purge(self, conn: Connection, note_id: UUID) -> Note | None:
        """Remove a soft-deleted note (its original and versions go by cascade); the note as
        it was, or None when it is absent or not deleted."""
        row = await conn.fetchrow(_PURGE, note_id)
        return _note(row) if row else None

    async def versions(self, conn: Connection, note_id: UUID) -> list[NoteVersion]:
        return [_version(row) for row in await conn.fetch(_VERSIONS, note_id)]

    async def version(self, conn: Connection, note_id: UUID, version: int) -> NoteVersion | None:
        row = await conn.fetchrow(_VERSION, note_id, version)
        return _version(row) if row else None

    async def list(
        self,
        conn: Connection,
        note_filter: NoteFilter,
        *,
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> list[Note]:
        """Notes newest first (id breaks ties), strictly after the ``after`` position."""
        where = _filter(note_filter)
        if after is not None:
            where.add("(created_at, id) < ({0}::timestamptz, {1}::uuid)", *after)
        query = (
            f"SELECT {_COLUMNS} FROM note WHERE {where.sql()} "  # noqa: S608 - fixed fragments
            f"ORDER BY created_at DESC, id DESC LIMIT ${len(where.args) + 1}"
        )
        return [_note(row) for row in await conn.fetch(query, *where.args, limit)]

    async def count(self, conn: Connection, note_filter: NoteFilter) -> int:
        where = _filter(note_filter)
        query = f"SELECT count(*) FROM note WHERE {where.sql()}"  # noqa: S608 - fixed fragments
        count: int = await conn.fetchval(query, *where.args)
        return count

    async def lock_external(
        self, conn: Connection, source: str, external_ids: Sequence[str]
    ) -> None:
        await conn.execute(_LOCK_EXTERNAL, source, list(external_ids))

    async def external_owners(
        self, conn: Connection, source: str, external_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, str | None]]:
        rows = await conn.fetch(
            "SELECT external_id, project, skill FROM note "
            "WHERE external_source = $1 AND external_id = ANY($2::text[])",
            source,
            list(external_ids),
        )
        return {row["external_id"]: (row["project"], row["skill"]) for row in rows}

    async def find_external(
        self, conn: Connection, source: str, external_ids: Sequence[str]
    ) -> dict[str, Note]:
        """The notes of ``source`` with these external ids, locked, by external id."""
        rows = await conn.fetch(_FIND_EXTERNAL, source, list(external_ids))
        return {row["external_id"]: _note(row) for row in rows}

    # -- for indexes built from a note's text (retrieval's Embedding job) ------------------

    async def text_key(
        self, conn: Connection, note_id: UUID
    ) -> tuple[str, str, tuple[str, ...]] | None:
        """The note's title, content hash and tags, share-locked to the end of ``conn``'s
        transaction: what an index built from the note must still match when it is
        written. None when the note is gone."""
        row = await conn.fetchrow(
            "SELECT title, content_hash, tags FROM note WHERE id = $1 FOR SHARE", note_id
        )
        return None if row is None else (row["title"], row["content_hash"], tuple(row["tags"]))
