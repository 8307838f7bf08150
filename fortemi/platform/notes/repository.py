"""All SQL for notes, their originals and their versions.

Every method takes a connection inside ``Database.memory_transaction`` (the search path is
the memory's schema, so table names are unqualified). Values always travel as parameters,
bound by name (:mod:`fortemi.platform.sql`); the column lists come from the tables declared
below. Only the filtered list and count splice text at run time, from fixed fragments;
those lines carry ``noqa: S608`` for that reason.

Writes that span tables are single statements with data-modifying CTEs: the note, its
version row (and, on insert, its original) are written in one round trip, and the version
row is stamped with the note's own ``updated_at`` so history and note agree exactly.
"""

from __future__ import annotations

import builtins
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
from fortemi.platform.sql import Query, Table, Where

__all__ = ["NOTE", "NOTE_VERSION", "NoteInsert", "NoteRepository", "NoteWrite", "note_filter_where"]

# The note's columns are the fields of Note, its versions' the fields of NoteVersion, and
# a new or updated note's writable columns the fields of NoteDraft: declared once, there.
NOTE = Table("note", Note)
NOTE_VERSION = Table("note_version", NoteVersion)
_DRAFT = Table("note", NoteDraft)

_GET = NOTE.query("SELECT {columns} FROM note WHERE id = :id")
# FOR NO KEY UPDATE, not FOR UPDATE: writers of one note still queue up (the two conflict
# with themselves and each other), but a row lock no longer blocks the key-share lock a
# foreign key check takes. A note's writer inserts links to other notes (its wiki links)
# while holding its own lock; with FOR UPDATE, two notes edited at once to link each other
# would each wait for the other's lock: a deadlock.
_GET_LOCKED = NOTE.query("SELECT {columns} FROM note WHERE id = :id FOR NO KEY UPDATE")

_GET_MANY = NOTE.query("SELECT {columns} FROM note WHERE id = ANY(:ids::uuid[])")

# One clock reading per row (clock_timestamp, not now()) so notes created in one batch keep
# their order; created_at = updated_at for a new note. The version row's columns are
# NoteVersion's, filled from the note's in that order (note_id from id).
_INSERT = NOTE.query(
    """
WITH t AS (SELECT clock_timestamp() AS at),
n AS (
    INSERT INTO note (id, title, content, format, source, metadata, tags, collection, project,
                      starred, archived, version, content_hash, external_source, external_id,
                      created_at, updated_at, created_by, updated_by, skill)
    SELECT :id::uuid, :title::text, :content::text, :format::text, :source::text,
           :metadata::jsonb, :tags::text[], :collection::text, :project::text,
           :starred::boolean, :archived::boolean, 1, :content_hash::text,
           :external_source::text, :external_id::text, t.at, t.at, :actor::text,
           :actor::text, :skill::text
    FROM t
    RETURNING *
),
o AS (
    INSERT INTO note_original (note_id, content, content_hash, created_at)
    SELECT id, content, content_hash, created_at FROM n
),
v AS (
    INSERT INTO note_version ({version_columns})
    SELECT id, version, title, content, format, metadata, tags, content_hash, created_at,
           created_by
    FROM n
)
SELECT {columns} FROM n
""",
    version_columns=NOTE_VERSION.select_list,
)

# :new_version says whether the versioned fields changed: only then is a version row
# written (the caller has already set :version to the next number under a row lock).
_WRITE = NOTE.query(
    """
WITH t AS (SELECT clock_timestamp() AS at),
n AS (
    UPDATE note
    SET title = :title::text, content = :content::text, format = :format::text,
        metadata = :metadata::jsonb, tags = :tags::text[], collection = :collection::text,
        project = :project::text, starred = :starred::boolean, archived = :archived::boolean,
        version = :version::integer, content_hash = :content_hash::text, updated_at = t.at,
        updated_by = :actor::text, skill = :skill::text
    FROM t
    WHERE note.id = :id::uuid
    RETURNING note.*
),
v AS (
    INSERT INTO note_version ({version_columns})
    SELECT id, version, title, content, format, metadata, tags, content_hash, updated_at,
           updated_by
    FROM n
    WHERE :new_version::boolean
)
SELECT {columns} FROM n
""",
    version_columns=NOTE_VERSION.select_list,
)

# Only a live note is deleted and only a deleted one restored, so repeating either is a
# no-op that leaves deleted_at (and updated_at) as they were.
_SOFT_DELETE = NOTE.query("""
WITH t AS (SELECT clock_timestamp() AS at)
UPDATE note SET deleted_at = t.at, updated_at = t.at, updated_by = :actor
FROM t
WHERE note.id = :id AND note.deleted_at IS NULL
RETURNING {columns}
""")

_PURGE = NOTE.query(
    "DELETE FROM note WHERE id = :id AND deleted_at IS NOT NULL RETURNING {columns}"
)

_RESTORE = NOTE.query("""
UPDATE note SET deleted_at = NULL, updated_at = clock_timestamp(), updated_by = :actor
WHERE id = :id AND deleted_at IS NOT NULL
RETURNING {columns}
""")

_VERSIONS = NOTE_VERSION.query(
    "SELECT {columns} FROM note_version WHERE note_id = :id ORDER BY version"
)

_VERSION = NOTE_VERSION.query(
    "SELECT {columns} FROM note_version WHERE note_id = :id AND version = :version"
)

# Advisory locks, one per (memory schema, source, external id), taken in key order so two
# batches never wait on each other in a cycle. They serialise batches on the same ids even
# when the note does not exist yet, which a row lock cannot. The two-int4 key space is
# apart from the bigint one the migrations lock in; a hash collision only over-serialises.
_LOCK_EXTERNAL = Query("""
SELECT pg_advisory_xact_lock(hashtext(current_schema()), k)
FROM (SELECT DISTINCT hashtext(:source::text || chr(31) || x) AS k
      FROM unnest(:external_ids::text[]) AS x) AS keys
ORDER BY k
""")

_EXTERNAL_OWNERS = Query(
    "SELECT external_id, project, skill FROM note "
    "WHERE external_source = :source AND external_id = ANY(:external_ids::text[])"
)

_FIND_EXTERNAL = NOTE.query("""
SELECT {columns} FROM note
WHERE external_source = :source AND external_id = ANY(:external_ids::text[])
ORDER BY id
FOR NO KEY UPDATE
""")

# The live notes of a source whose external id sorts in (:after, :through], bytewise (the
# order of UTF-8, which is also Python's order of str): what a sync of that range prunes.
_EXTERNAL_RANGE = NOTE.query("""
SELECT {columns} FROM note
WHERE external_source = :source AND deleted_at IS NULL
  AND (:after::text IS NULL OR external_id COLLATE "C" > :after::text COLLATE "C")
  AND (:through::text IS NULL OR external_id COLLATE "C" <= :through::text COLLATE "C")
ORDER BY id
FOR NO KEY UPDATE
""")

# What an index built from the note's text must still match when it is written.
_TEXT_KEY = Query("SELECT title, content_hash, tags FROM note WHERE id = :id FOR SHARE")


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
        """The arguments of the insert statement, bound by name."""
        return _INSERT.args(
            _DRAFT.binds(self.state),
            id=self.id,
            content_hash=self.content_hash,
            actor=self.actor,
            external_source=self.external_source,
            external_id=self.external_id,
        )


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
        """The arguments of the update statement, bound by name (``source`` never
        changes after insert)."""
        return _WRITE.args(
            _DRAFT.binds(self.state, omit=("source",)),
            id=self.id,
            version=self.version,
            content_hash=self.content_hash,
            new_version=self.new_version,
            actor=self.actor,
        )


def _returned(row: asyncpg.Record | None) -> Note:
    """The note a write RETURNING a row returned; its absence is a bug, not bad input."""
    if row is None:
        raise RuntimeError("a note write returned no row; the note was locked and must exist")
    return NOTE.from_record(row)


def _note_or_none(row: asyncpg.Record | None) -> Note | None:
    return NOTE.from_record(row) if row is not None else None


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
    _concepts(where, f)
    return where


# ``note_concept`` is the graph's table, named here (platform imports nothing of ``graph``)
# because its filters must be SQL predicates applied before ranking and LIMIT, like the tag
# filters, and the caller has already expanded each concept to its descendants.
_HAS_CONCEPT = (
    "EXISTS (SELECT 1 FROM note_concept nc WHERE nc.note_id = note.id"
    " AND nc.concept_id = ANY({0}::uuid[]))"
)


def _concepts(where: Where, f: NoteFilter) -> None:
    for required in f.concepts_all:
        where.add(_HAS_CONCEPT, sorted(required))
    if f.concepts_any is not None:
        where.add(_HAS_CONCEPT, sorted(f.concepts_any))
    if f.concepts_none:
        where.add("NOT " + _HAS_CONCEPT, sorted(f.concepts_none))


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
        # FOR NO KEY UPDATE makes concurrent writers of one note queue up; each then reads the
        # state the previous one committed, so no update is lost.
        query = _GET_LOCKED if lock else _GET
        return _note_or_none(await conn.fetchrow(query.sql, *query.args(id=note_id)))

    async def get_many(self, conn: Connection, note_ids: Sequence[UUID]) -> dict[UUID, Note]:
        rows = await conn.fetch(_GET_MANY.sql, *_GET_MANY.args(ids=list(note_ids)))
        return {row["id"]: NOTE.from_record(row) for row in rows}

    async def insert(self, conn: Connection, note: NoteInsert) -> Note:
        """Insert a note with its original and its version 1."""
        return _returned(await conn.fetchrow(_INSERT.sql, *note.args()))

    async def insert_many(self, conn: Connection, notes: Sequence[NoteInsert]) -> None:
        if notes:
            await conn.executemany(_INSERT.sql, [note.args() for note in notes])

    async def write(self, conn: Connection, note: NoteWrite) -> Note:
        """Store the next state of a note the caller has locked."""
        return _returned(await conn.fetchrow(_WRITE.sql, *note.args()))

    async def write_many(self, conn: Connection, notes: Sequence[NoteWrite]) -> None:
        if notes:
            await conn.executemany(_WRITE.sql, [note.args() for note in notes])

    async def soft_delete(self, conn: Connection, note_id: UUID, actor: str | None) -> Note | None:
        """The note, newly deleted; None when it is absent or already deleted."""
        args = _SOFT_DELETE.args(id=note_id, actor=actor)
        return _note_or_none(await conn.fetchrow(_SOFT_DELETE.sql, *args))

    async def restore(self, conn: Connection, note_id: UUID, actor: str | None) -> Note | None:
        """The note, newly restored; None when it is absent or not deleted."""
        args = _RESTORE.args(id=note_id, actor=actor)
        return _note_or_none(await conn.fetchrow(_RESTORE.sql, *args))

    async def purge(self, conn: Connection, note_id: UUID) -> Note | None:
        """Remove a soft-deleted note (its original and versions go by cascade); the note as
        it was, or None when it is absent or not deleted."""
        return _note_or_none(await conn.fetchrow(_PURGE.sql, *_PURGE.args(id=note_id)))

    async def versions(self, conn: Connection, note_id: UUID) -> list[NoteVersion]:
        return NOTE_VERSION.from_records(
            await conn.fetch(_VERSIONS.sql, *_VERSIONS.args(id=note_id))
        )

    async def version(self, conn: Connection, note_id: UUID, version: int) -> NoteVersion | None:
        row = await conn.fetchrow(_VERSION.sql, *_VERSION.args(id=note_id, version=version))
        return NOTE_VERSION.from_record(row) if row else None

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
            f"SELECT {NOTE.select_list} FROM note WHERE {where.sql()} "  # noqa: S608 - fixed fragments
            f"ORDER BY created_at DESC, id DESC LIMIT ${len(where.args) + 1}"
        )
        return NOTE.from_records(await conn.fetch(query, *where.args, limit))

    async def count(self, conn: Connection, note_filter: NoteFilter) -> int:
        where = _filter(note_filter)
        query = f"SELECT count(*) FROM note WHERE {where.sql()}"  # noqa: S608 - fixed fragments
        count: int = await conn.fetchval(query, *where.args)
        return count

    async def lock_external(
        self, conn: Connection, source: str, external_ids: Sequence[str]
    ) -> None:
        args = _LOCK_EXTERNAL.args(source=source, external_ids=list(external_ids))
        await conn.execute(_LOCK_EXTERNAL.sql, *args)

    async def external_owners(
        self, conn: Connection, source: str, external_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, str | None]]:
        args = _EXTERNAL_OWNERS.args(source=source, external_ids=list(external_ids))
        rows = await conn.fetch(_EXTERNAL_OWNERS.sql, *args)
        return {row["external_id"]: (row["project"], row["skill"]) for row in rows}

    async def find_external(
        self, conn: Connection, source: str, external_ids: Sequence[str]
    ) -> dict[str, Note]:
        """The notes of ``source`` with these external ids, locked, by external id."""
        args = _FIND_EXTERNAL.args(source=source, external_ids=list(external_ids))
        rows = await conn.fetch(_FIND_EXTERNAL.sql, *args)
        return {row["external_id"]: NOTE.from_record(row) for row in rows}

    async def external_range(
        self, conn: Connection, source: str, after: str | None, through: str | None
    ) -> builtins.list[Note]:
        """The live notes of ``source`` with an external id in (after, through], locked."""
        args = _EXTERNAL_RANGE.args(source=source, after=after, through=through)
        return NOTE.from_records(await conn.fetch(_EXTERNAL_RANGE.sql, *args))

    # -- for indexes built from a note's text (retrieval's Embedding job) ------------------

    async def text_key(
        self, conn: Connection, note_id: UUID
    ) -> tuple[str, str, tuple[str, ...]] | None:
        """The note's title, content hash and tags, share-locked to the end of ``conn``'s
        transaction: what an index built from the note must still match when it is
        written. None when the note is gone."""
        row = await conn.fetchrow(_TEXT_KEY.sql, *_TEXT_KEY.args(id=note_id))
        return None if row is None else (row["title"], row["content_hash"], tuple(row["tags"]))
