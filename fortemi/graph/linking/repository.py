"""All of automatic linking's SQL: note vectors (``note_embedding``) and semantic links
(``note_link`` rows of kind ``semantic``). Every method runs in the caller's memory
transaction.

A note vector is the mean of the note's chunk vectors, which are retrieval's: the
service reads them through :mod:`fortemi.retrieval.service`, never from its tables here.

A semantic link is one undirected edge stored as two rows. Each pair remembers which of
its notes chose it and how (``metadata.choices``, ``metadata.origins``): re-linking a
note withdraws only its own choices, and a pair goes when neither note still chooses it.
A row's score, rank and metadata are its source's choice when it made one, else the
other note's: the same rows whichever note was linked last, and linking twice changes
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from fortemi.graph.linking.selection import Vector
from fortemi.graph.links.repository import NOTE_LINK
from fortemi.platform.database import Connection, stored_vector
from fortemi.platform.sql import Query, Table

__all__ = [
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "NOTE_EMBEDDING",
    "LinkRow",
    "LinkingRepository",
    "Neighbour",
    "NoteVector",
]

# As chunk_embedding's per-set indexes (fortemi/retrieval/sets.py gives the measurements).
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 128


@dataclass(frozen=True, slots=True)
class Neighbour:
    note_id: UUID
    vector: Vector


@dataclass(frozen=True, slots=True)
class NoteVector:
    """A row of ``note_embedding``: a note's vector in one embedding set."""

    set_id: int
    note_id: UUID
    embedding: Vector


# The one declaration of note_embedding's columns (maintenance reads it too).
NOTE_EMBEDDING = Table("note_embedding", NoteVector)


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One semantic link to write, both directions."""

    target_id: UUID
    score: float
    rank: int
    metadata: dict[str, Any]


def index_name(set_id: int) -> str:
    return f"note_embedding_hnsw_{int(set_id)}"


_LIVE = Query("SELECT true FROM note WHERE id = :note_id AND deleted_at IS NULL")
# Live notes without a vector in the set, by id after ``after``: the Linking job writes a
# note's vector before its links, so these are the notes never linked in the set (or
# whose links were lost with their vector).
_UNLINKED = Query(
    """
    SELECT n.id FROM note n
    WHERE n.deleted_at IS NULL AND n.id > :after
      AND NOT EXISTS (SELECT 1 FROM note_embedding v
                      WHERE v.set_id = :set_id AND v.note_id = n.id)
    ORDER BY n.id
    LIMIT :limit
    """
)
_UPSERT_VECTOR = NOTE_EMBEDDING.insert(
    suffix="ON CONFLICT (set_id, note_id) DO UPDATE SET embedding = excluded.embedding, "
    "updated_at = clock_timestamp() "
    "WHERE note_embedding.embedding IS DISTINCT FROM excluded.embedding"
)
_DROP_VECTOR = Query("DELETE FROM note_embedding WHERE set_id = :set_id AND note_id = :note_id")
# About how many note vectors the memory holds, from PostgreSQL's statistics (no scan):
# k = floor(log2 N) moves by one when N doubles, and counting 10,000 vectors of 1.5 kB
# each was most of a link's time. Counted exactly while the statistics know no rows
# yet (a young memory, where an exact count costs nothing).
_COUNT = Query(
    """
    SELECT CASE WHEN est.n >= 1000 THEN est.n
                ELSE (SELECT count(*) FROM note_embedding WHERE set_id = :set_id) END
    FROM (SELECT greatest(pg_stat_get_live_tuples('note_embedding'::regclass),
                          (SELECT reltuples FROM pg_class
                           WHERE oid = 'note_embedding'::regclass)::bigint, 0) AS n) AS est
    """
)
# A pair's rows keep every note's choice of it in ``metadata.choices`` (origin → its
# rank, score, strategy, ...). Withdraw a note's choices, upsert its new ones, drop pairs
# nobody chooses, then derive each touched row from the choices alone: the row's own
# source's choice when it made one, else the other note's. So the rows depend only on
# the current choices, never on which note was linked last.
_WITHDRAW = Query(
    """
    UPDATE note_link SET metadata = metadata #- ARRAY['choices', :origin]
    WHERE kind = 'semantic' AND (source_id = :note_id OR target_id = :note_id)
      AND metadata -> 'choices' ? :origin
    """
)
_UPSERT_LINK = NOTE_LINK.insert(
    (
        "source_id",
        "target_id",
        "kind",
        "score",
        "rank",
        "metadata",
        "set_id",
        "model",
        "computed_at",
        "created_by",
    ),
    values={"kind": "'semantic'", "computed_at": "clock_timestamp()", "created_by": "'Linking'"},
    suffix="""
    ON CONFLICT (source_id, kind, target_id) DO UPDATE SET
        set_id = excluded.set_id, model = excluded.model, computed_at = excluded.computed_at,
        metadata = jsonb_set(note_link.metadata, '{choices}',
            coalesce(note_link.metadata -> 'choices', '{}'::jsonb)
            || (excluded.metadata -> 'choices'))
    """,
)
_DROP_UNCHOSEN = Query(
    """
    DELETE FROM note_link
    WHERE kind = 'semantic' AND (source_id = :note_id OR target_id = :note_id)
      AND coalesce(metadata -> 'choices', '{}'::jsonb) = '{}'::jsonb
    """
)
_DERIVE = Query(
    """
    UPDATE note_link l SET
        score = (d.choice ->> 'score')::real,
        rank = (d.choice ->> 'rank')::integer,
        metadata = d.choice - 'score' || jsonb_build_object(
            'choices', l.metadata -> 'choices',
            'origins', (SELECT jsonb_agg(o ORDER BY o)
                        FROM jsonb_object_keys(l.metadata -> 'choices') AS o))
    FROM (
        SELECT source_id, target_id, coalesce(
            metadata -> 'choices' -> (source_id::text),
            metadata -> 'choices' -> (target_id::text)) AS choice
        FROM note_link
        WHERE kind = 'semantic' AND (source_id = :note_id OR target_id = :note_id)
    ) AS d
    WHERE l.kind = 'semantic' AND l.source_id = d.source_id AND l.target_id = d.target_id
    """
)


class LinkingRepository:
    async def unlinked(self, conn: Connection, set_id: int, after: UUID, limit: int) -> list[UUID]:
        """Up to ``limit`` live notes after ``after`` (by id) with no vector in the set."""
        args = _UNLINKED.args(set_id=set_id, after=after, limit=limit)
        return [row["id"] for row in await conn.fetch(_UNLINKED.sql, *args)]

    async def is_live(self, conn: Connection, note_id: UUID) -> bool:
        return bool(await conn.fetchval(_LIVE.sql, *_LIVE.args(note_id=note_id)))

    async def store_vector(
        self, conn: Connection, set_id: int, note_id: UUID, vector: Vector
    ) -> None:
        """Make ``vector`` the note's vector in the set, and make sure the set has its
        partial HNSW index (created with the set's first note vector)."""
        await self.ensure_index(conn, set_id, int(vector.shape[0]))
        await conn.execute(
            _UPSERT_VECTOR.sql,
            *_UPSERT_VECTOR.args(set_id=set_id, note_id=note_id, embedding=vector),
        )

    async def drop_vector(self, conn: Connection, set_id: int, note_id: UUID) -> None:
        await conn.execute(_DROP_VECTOR.sql, *_DROP_VECTOR.args(set_id=set_id, note_id=note_id))

    async def ensure_index(self, conn: Connection, set_id: int, dimension: int) -> None:
        """The set's partial HNSW index on a cast to its dimension, as chunk vectors have.
        Looked up first: ``CREATE INDEX IF NOT EXISTS`` would lock the table each time."""
        name = index_name(set_id)
        if await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", name):
            return
        # Both numbers are ours (an identity value and a vector's length), never input.
        await conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON note_embedding "
            f"USING hnsw ((embedding::vector({int(dimension)})) vector_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
            f"WHERE set_id = {int(set_id)}"
        )

    async def note_count(self, conn: Connection, set_id: int) -> int:
        return int(await conn.fetchval(_COUNT.sql, *_COUNT.args(set_id=set_id)))

    async def nearest(
        self, conn: Connection, set_id: int, note_id: UUID, vector: Vector, limit: int
    ) -> list[Neighbour]:
        """The ``limit`` live notes nearest ``vector`` in the set's HNSW index, the note
        itself excluded. The caller sets ``hnsw.ef_search`` to at least ``limit``."""
        cast = f"vector({int(vector.shape[0])})"
        # The set's id, dimension and the limit are spliced as constants (ours, integers):
        # the partial index is only used when the planner sees the set's id.
        rows = await conn.fetch(
            f"""
            WITH nearest AS MATERIALIZED (
                SELECT e.note_id, e.embedding
                FROM note_embedding e
                WHERE e.set_id = {int(set_id)}
                ORDER BY e.embedding::{cast} <=> $1::{cast}
                LIMIT {int(limit) + 1}
            )
            SELECT nearest.note_id, nearest.embedding FROM nearest
            JOIN note n ON n.id = nearest.note_id AND n.deleted_at IS NULL
            WHERE nearest.note_id <> $2
            """,  # noqa: S608 - set id, dimension and limit are ours; values are parameters
            vector,
            note_id,
        )
        return [Neighbour(row["note_id"], stored_vector(row["embedding"])) for row in rows]

    async def replace_links(
        self,
        conn: Connection,
        note_id: UUID,
        links: Sequence[LinkRow],
        *,
        set_id: int,
        model: str | None,
    ) -> None:
        """Make ``links`` the note's own choices, both directions; pairs only this note
        chose and no longer does go."""
        origin = str(note_id)
        await conn.execute(_WITHDRAW.sql, *_WITHDRAW.args(note_id=note_id, origin=origin))
        keyed = []
        for link in links:
            choice = {**link.metadata, "rank": link.rank, "score": link.score}
            metadata = {"choices": {origin: choice}}
            for source, target in ((note_id, link.target_id), (link.target_id, note_id)):
                binds = _UPSERT_LINK.args(
                    source_id=source,
                    target_id=target,
                    score=link.score,
                    rank=link.rank,
                    metadata=metadata,
                    set_id=set_id,
                    model=model,
                )
                keyed.append(((source, target), binds))
        if keyed:
            # In key order: two notes linked at once lock their shared rows in the same
            # order, so they wait for each other instead of deadlocking.
            keyed.sort(key=lambda item: item[0])
            await conn.executemany(_UPSERT_LINK.sql, [binds for _, binds in keyed])
        await conn.execute(_DROP_UNCHOSEN.sql, *_DROP_UNCHOSEN.args(note_id=note_id))
        await conn.execute(_DERIVE.sql, *_DERIVE.args(note_id=note_id))
