"""All SQL on ``note_link`` (explicit and wiki rows, and link reads), ``wiki_link``,
``wiki_link_candidate`` and ``note_wiki_key`` (the vault reads are in
:mod:`fortemi.graph.links.vault_repository`).

:data:`NOTE_LINK` is the one declaration of ``note_link``'s columns for the whole graph:
linking (semantic rows), maintenance (SNN scores, PFNET flags) and the traversal write
and read the same table and take their column lists from it.

Every method takes a connection inside ``Database.memory_transaction``. Values travel as
parameters bound by name; lists of rows travel as arrays through ``unnest``, one round
trip per statement whatever their length. The reads that apply a caller's read scope
splice the fixed fragments of :func:`~fortemi.platform.notes.repository.note_filter_where`
(those lines carry ``noqa: S608``), inside a sub-select on ``note`` so its unqualified
columns can only mean the note's.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from fortemi.graph.links.models import (
    DanglingRef,
    LinkKind,
    NoteLink,
    WikiCandidateRow,
    WikiLinkRow,
)
from fortemi.graph.links.resolution import NoteKey
from fortemi.platform.database import Connection
from fortemi.platform.notes.models import NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import note_filter_where
from fortemi.platform.sql import Query, Table, Where

__all__ = ["NOTE_LINK", "WIKI_LINK", "LinkRepository"]

NOTE_LINK = Table("note_link", NoteLink)
WIKI_LINK = Table("wiki_link", WikiLinkRow)
_DANGLING = Table("wiki_link", DanglingRef)

_KEYS_OF = Query("SELECT key FROM note_wiki_key WHERE note_id = ANY(:ids::uuid[])")
# Who wrote the notes' current state: the actor of the events their links cause.
_WRITERS = Query("SELECT DISTINCT updated_by FROM note WHERE id = ANY(:ids::uuid[])")

# One advisory lock per key's bucket, in bucket order (so two writers never wait on each
# other in a cycle), held to the end of the transaction. A note gaining a key and another
# note's new reference to that key are then serialised: whichever commits second sees the
# other, so no reference stays dangling to a note that exists. Keys go to 1024 buckets per
# schema because every advisory lock takes a slot of the server's shared lock table (64
# per connection by default): a batch of vault notes has tens of thousands of keys (each
# reference has up to eight candidates), which one lock per key ran out of ("out of
# shared memory"); 1024 leaves room for several such batches at once. Meeting another
# lock of the schema (external ids) only over-serialises.
_LOCK_KEYS = Query("""
SELECT pg_advisory_xact_lock(hashtext(current_schema()), k)
FROM (SELECT DISTINCT hashtext('wiki' || chr(31) || x) & 1023 AS k
      FROM unnest(:keys::text[]) AS x) AS keys
ORDER BY k
""")

_DELETE_KEYS = Query("DELETE FROM note_wiki_key WHERE note_id = ANY(:ids::uuid[])")
_INSERT_KEYS = Query("""
INSERT INTO note_wiki_key (note_id, kind, key)
SELECT * FROM unnest(:note_ids::uuid[], :kinds::text[], :keys::text[])
ON CONFLICT DO NOTHING
""")

_DELETE_REFS = Query("DELETE FROM wiki_link WHERE source_id = ANY(:ids::uuid[])")
_INSERT_REFS = Query("""
INSERT INTO wiki_link (source_id, ordinal, target, target_key, heading, label, embed,
                       block, vault)
SELECT * FROM unnest(:source_ids::uuid[], :ordinals::integer[], :targets::text[],
                     :target_keys::text[], :headings::text[], :labels::text[],
                     :embeds::boolean[], :blocks::text[], :vaults::text[])
""")
_INSERT_CANDIDATES = Query("""
INSERT INTO wiki_link_candidate (source_id, ordinal, rank, rule, key)
SELECT * FROM unnest(:source_ids::uuid[], :ordinals::integer[], :ranks::smallint[],
                     :rules::text[], :keys::text[])
""")

# Outside vaults: each key's note by the precedence of fortemi.graph.links.resolution (a
# live note before a soft-deleted one; a path key with a "/" prefers a path match, any
# other title, alias, path; then the oldest note); every reference with one of the keys is
# pointed at it, or at nothing. Returns the notes whose references changed.
_RESOLVE = Query("""
WITH wanted AS (SELECT DISTINCT x AS key FROM unnest(:keys::text[]) AS x),
best AS (
    SELECT DISTINCT ON (k.key) k.key, k.note_id, k.kind
    FROM note_wiki_key k JOIN note n ON n.id = k.note_id
    WHERE k.key IN (SELECT key FROM wanted) AND k.kind <> 'vault'
    ORDER BY k.key,
             n.deleted_at IS NOT NULL,
             CASE WHEN k.kind = 'path' AND strpos(k.key, '/') > 0 THEN 0
                  WHEN k.kind = 'title' THEN 1
                  WHEN k.kind = 'alias' THEN 2
                  ELSE 3 END,
             n.created_at, n.id
),
resolved AS (
    SELECT w.key, b.note_id, COALESCE(b.kind, 'dangling') AS resolution
    FROM wanted w LEFT JOIN best b ON b.key = w.key
)
UPDATE wiki_link l
SET target_id = r.note_id, resolution = r.resolution, matches = (r.note_id IS NOT NULL)::int
FROM resolved r
WHERE l.target_key = r.key AND l.vault IS NULL
  AND (l.target_id, l.resolution) IS DISTINCT FROM (r.note_id, r.resolution)
RETURNING l.source_id
""")

# Inside vaults (fortemi.graph.links.vault): every reference with one of the keys among
# its candidates at or before the rank that decided it (a later one cannot change the
# outcome; an unresolved reference has no such rank) takes its first candidate that live
# notes have: one note wins, several make it ambiguous (the own-project preference is a
# candidate of its own, before the vault-wide one), none at any rank leave it dangling.
# The target's kind comes from its project or skill. Each step is a probe of
# wiki_link_candidate(key), note_wiki_key(key) or a primary key. Returns the notes whose
# references changed.
_RESOLVE_VAULT = Query("""
WITH refs AS (
    SELECT DISTINCT c.source_id, c.ordinal
    FROM wiki_link_candidate c
    JOIN wiki_link l ON l.source_id = c.source_id AND l.ordinal = c.ordinal
    WHERE c.key = ANY(:keys::text[]) AND c.rank <= COALESCE(l.decided_rank, 32767)
),
matches AS (
    SELECT c.source_id, c.ordinal, c.rank, c.rule, k.note_id
    FROM refs r
    JOIN wiki_link_candidate c ON c.source_id = r.source_id AND c.ordinal = r.ordinal
    JOIN note_wiki_key k ON k.key = c.key AND k.kind = 'vault'
    JOIN note n ON n.id = k.note_id AND n.deleted_at IS NULL
),
decided AS (
    SELECT DISTINCT ON (m.source_id, m.ordinal) m.source_id, m.ordinal, m.rank, m.rule,
           count(*) OVER (PARTITION BY m.source_id, m.ordinal, m.rank) AS found,
           m.note_id
    FROM matches m
    ORDER BY m.source_id, m.ordinal, m.rank, m.note_id
),
outcome AS (
    SELECT r.source_id, r.ordinal, d.rank,
           CASE WHEN d.found = 1 THEN d.note_id END AS target_id,
           CASE WHEN d.found IS NULL THEN 'dangling'
                WHEN d.found = 1 THEN d.rule
                ELSE 'ambiguous' END AS resolution,
           COALESCE(d.found, 0)::int AS matches
    FROM refs r LEFT JOIN decided d USING (source_id, ordinal)
),
typed AS (
    SELECT o.source_id, o.ordinal, o.rank, o.target_id, o.resolution, o.matches,
           CASE WHEN t.id IS NULL THEN 'unknown'
                WHEN t.project IS NOT NULL THEN 'memory'
                WHEN t.skill IS NOT NULL THEN 'skill'
                ELSE 'shared_concept' END AS target_type
    FROM outcome o LEFT JOIN note t ON t.id = o.target_id
)
UPDATE wiki_link l
SET target_id = t.target_id, resolution = t.resolution, matches = t.matches,
    target_type = t.target_type, decided_rank = t.rank
FROM typed t
WHERE l.source_id = t.source_id AND l.ordinal = t.ordinal
  AND (l.target_id, l.resolution, l.matches, l.target_type, l.decided_rank)
      IS DISTINCT FROM (t.target_id, t.resolution, t.matches, t.target_type, t.rank)
RETURNING l.source_id
""")

# Wiki edges mirror the resolved references: one per (source, target), score 1.0, none to
# the note itself. Both statements return the edges they changed.
_DROP_WIKI_EDGES = Query("""
DELETE FROM note_link l
WHERE l.kind = 'wiki' AND l.source_id = ANY(:ids::uuid[])
  AND NOT EXISTS (SELECT 1 FROM wiki_link w
                  WHERE w.source_id = l.source_id AND w.target_id = l.target_id)
RETURNING l.source_id, l.target_id
""")
_ADD_WIKI_EDGES = NOTE_LINK.query(
    """
INSERT INTO {table} ({inserted})
SELECT DISTINCT w.source_id, w.target_id, 'wiki', 1.0
FROM wiki_link w
WHERE w.source_id = ANY(:ids::uuid[]) AND w.target_id IS NOT NULL
  AND w.target_id <> w.source_id
ON CONFLICT DO NOTHING
RETURNING source_id, target_id
""",
    inserted=NOTE_LINK.names("source_id", "target_id", "kind", "score"),
)

_INSERT_EXPLICIT = NOTE_LINK.insert(
    ("source_id", "target_id", "kind", "score", "created_by"),
    values={"kind": "'explicit'"},
    suffix="ON CONFLICT (source_id, kind, target_id) DO NOTHING RETURNING {columns}",
)
_GET_LINK = NOTE_LINK.query(
    "SELECT {columns} FROM note_link "
    "WHERE source_id = :source_id AND kind = :kind AND target_id = :target_id"
)
_DELETE_EXPLICIT = NOTE_LINK.query(
    "DELETE FROM note_link "
    "WHERE source_id = :source_id AND kind = 'explicit' AND target_id = :target_id "
    "RETURNING {columns}"
)

_DANGLING_OF = _DANGLING.query(
    "SELECT {columns} FROM wiki_link WHERE source_id = :id AND target_id IS NULL "
    "ORDER BY ordinal LIMIT :limit"
)

# A link's other end: ``near`` is the note whose links are listed, ``far`` the other.
_ENDS = {"outgoing": ("source_id", "target_id"), "incoming": ("target_id", "source_id")}


def _visible_live(visibility: NoteVisibility | None) -> NoteFilter:
    return NoteFilter(visibility=visibility)


class LinkRepository:
    # -- wiki references ---------------------------------------------------------------

    async def keys_of(self, conn: Connection, note_ids: Sequence[UUID]) -> set[str]:
        rows = await conn.fetch(_KEYS_OF.sql, *_KEYS_OF.args(ids=list(note_ids)))
        return {row["key"] for row in rows}

    async def writer(self, conn: Connection, note_ids: Sequence[UUID]) -> str | None:
        """The one who last wrote all of these notes; None when several did (or nobody)."""
        rows = await conn.fetch(_WRITERS.sql, *_WRITERS.args(ids=list(note_ids)))
        return rows[0]["updated_by"] if len(rows) == 1 else None

    async def lock_keys(self, conn: Connection, keys: set[str]) -> None:
        if keys:
            await conn.execute(_LOCK_KEYS.sql, *_LOCK_KEYS.args(keys=sorted(keys)))

    async def replace_keys(
        self, conn: Connection, note_ids: Sequence[UUID], keys: dict[UUID, set[NoteKey]]
    ) -> None:
        """The notes' keys become ``keys`` (a note absent from it has none)."""
        await conn.execute(_DELETE_KEYS.sql, *_DELETE_KEYS.args(ids=list(note_ids)))
        rows = [(note_id, k.kind, k.key) for note_id, found in keys.items() for k in found]
        if rows:
            note_ids_, kinds, values = (list(column) for column in zip(*rows, strict=True))
            await conn.execute(
                _INSERT_KEYS.sql, *_INSERT_KEYS.args(note_ids=note_ids_, kinds=kinds, keys=values)
            )

    async def replace_references(
        self,
        conn: Connection,
        source_ids: Sequence[UUID],
        rows: Sequence[WikiLinkRow],
        candidates: Sequence[WikiCandidateRow] = (),
    ) -> None:
        """The sources' references become ``rows`` (vault references with their
        ``candidates``), all unresolved until :meth:`resolve`."""
        await conn.execute(_DELETE_REFS.sql, *_DELETE_REFS.args(ids=list(source_ids)))
        if not rows:
            return
        await conn.execute(
            _INSERT_REFS.sql,
            *_INSERT_REFS.args(
                source_ids=[r.source_id for r in rows],
                ordinals=[r.ordinal for r in rows],
                targets=[r.target for r in rows],
                target_keys=[r.target_key for r in rows],
                headings=[r.heading for r in rows],
                labels=[r.label for r in rows],
                embeds=[r.embed for r in rows],
                blocks=[r.block for r in rows],
                vaults=[r.vault for r in rows],
            ),
        )
        if candidates:
            await conn.execute(
                _INSERT_CANDIDATES.sql,
                *_INSERT_CANDIDATES.args(
                    source_ids=[c.source_id for c in candidates],
                    ordinals=[c.ordinal for c in candidates],
                    ranks=[c.rank for c in candidates],
                    rules=[c.rule for c in candidates],
                    keys=[c.key for c in candidates],
                ),
            )

    async def resolve(self, conn: Connection, keys: set[str]) -> set[UUID]:
        """Point every reference with one of ``keys`` at the note that key names now (or
        at nothing); the sources whose references changed."""
        if not keys:
            return set()
        wanted = sorted(keys)
        rows = await conn.fetch(_RESOLVE.sql, *_RESOLVE.args(keys=wanted))
        rows += await conn.fetch(_RESOLVE_VAULT.sql, *_RESOLVE_VAULT.args(keys=wanted))
        return {row["source_id"] for row in rows}

    async def sync_wiki_edges(
        self, conn: Connection, source_ids: set[UUID]
    ) -> set[tuple[UUID, UUID]]:
        """Make the sources' wiki edges mirror their resolved references; the (source,
        target) pairs added or removed."""
        if not source_ids:
            return set()
        ids = sorted(source_ids)
        removed = await conn.fetch(_DROP_WIKI_EDGES.sql, *_DROP_WIKI_EDGES.args(ids=ids))
        added = await conn.fetch(_ADD_WIKI_EDGES.sql, *_ADD_WIKI_EDGES.args(ids=ids))
        return {(row["source_id"], row["target_id"]) for row in [*removed, *added]}

    async def dangling(self, conn: Connection, note_id: UUID, limit: int) -> list[DanglingRef]:
        rows = await conn.fetch(_DANGLING_OF.sql, *_DANGLING_OF.args(id=note_id, limit=limit))
        return _DANGLING.from_records(rows)

    # -- explicit links ----------------------------------------------------------------

    async def insert_explicit(
        self, conn: Connection, source_id: UUID, target_id: UUID, score: float, actor: str | None
    ) -> NoteLink | None:
        """The new link; None when one from ``source_id`` to ``target_id`` exists."""
        args = _INSERT_EXPLICIT.args(
            source_id=source_id, target_id=target_id, score=score, created_by=actor
        )
        row = await conn.fetchrow(_INSERT_EXPLICIT.sql, *args)
        return None if row is None else NOTE_LINK.from_record(row)

    async def get(
        self, conn: Connection, source_id: UUID, kind: LinkKind, target_id: UUID
    ) -> NoteLink | None:
        args = _GET_LINK.args(source_id=source_id, kind=kind.value, target_id=target_id)
        row = await conn.fetchrow(_GET_LINK.sql, *args)
        return None if row is None else NOTE_LINK.from_record(row)

    async def delete_explicit(
        self, conn: Connection, source_id: UUID, target_id: UUID
    ) -> NoteLink | None:
        args = _DELETE_EXPLICIT.args(source_id=source_id, target_id=target_id)
        row = await conn.fetchrow(_DELETE_EXPLICIT.sql, *args)
        return None if row is None else NOTE_LINK.from_record(row)

    # -- reads -------------------------------------------------------------------------

    async def links(
        self,
        conn: Connection,
        note_id: UUID,
        direction: str,
        *,
        visibility: NoteVisibility | None,
        limit: int,
    ) -> list[NoteLink]:
        """The note's ``outgoing`` or ``incoming`` links whose other end is a live note
        the caller may read (``visibility``; None: any), strongest first.

        The read scope is a predicate of the statement, before its LIMIT: a page of links
        is a full page of readable ones, and an unreadable note is not even counted.
        """
        near, far = _ENDS[direction]
        where = note_filter_where(_visible_live(visibility), Where(note_id))
        query = (
            f"SELECT {NOTE_LINK.select_list_of('l')} FROM note_link l "  # noqa: S608 - fixed fragments
            f"JOIN (SELECT id FROM note WHERE {where.sql()}) AS n ON n.id = l.{far} "
            f"WHERE l.{near} = $1 "
            f"ORDER BY l.score DESC, l.kind, l.{far} LIMIT ${len(where.args) + 1}"
        )
        return NOTE_LINK.from_records(await conn.fetch(query, *where.args, limit))
