"""All of retrieval's SQL over a memory's search tables: the lexical index (``lex_doc``,
``lex_posting``), chunks and their embeddings. Every method runs in the caller's memory
transaction (:meth:`~fortemi.platform.database.Database.memory_transaction`).

Filters on notes come as a :class:`~fortemi.platform.sql.Where` on the ``note`` table,
built by the notes package; statements join ``note`` only to apply them. Vectors are
numpy float32 arrays, bound in pgvector's binary form (the pool's codec).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.platform.database import Connection, stored_vector
from fortemi.platform.sql import Query, Table, Where
from fortemi.retrieval.sets import EMBEDDING_SET, EmbeddingSet

__all__ = [
    "CHUNK",
    "CHUNK_EMBEDDING",
    "PREFIX_EXPANSIONS",
    "Bm25",
    "Chunk",
    "ChunkEmbedding",
    "ChunkRow",
    "NewChunk",
    "RetrievalRepository",
    "SemanticRow",
]

Vector = npt.NDArray[np.float32]
PREFIX_EXPANSIONS = 20  # indexed words a query's prefix (``retriev*``) stands for, at most


@dataclass(frozen=True, slots=True)
class Bm25:
    """What a BM25 ranking binds first: the query's text and prefixes, the corpus size and
    average length, and the ranking's parameters."""

    text: str
    prefixes: tuple[str, ...]
    docs: int
    avgdl: float
    k1: float
    b: float

    def args(self, given: Sequence[tuple[str, float]] | None = None) -> tuple[object, ...]:
        """In the order of :func:`bm25_sql`'s $1..$6; with ``given`` (each term's lexeme and
        weight, counted already), of its ``weights=True`` statement's $1..$5."""
        if given is not None:
            lexemes, weights = [t for t, _ in given], [w for _, w in given]
            return (lexemes, weights, self.avgdl, self.k1, self.b)
        return (self.text, self.docs, self.avgdl, self.k1, self.b, list(self.prefixes))


@dataclass(frozen=True, slots=True)
class NewChunk:
    """A piece of a note to store as a chunk: the columns that differ between a note's
    chunks, named as in ``chunk``."""

    ordinal: int
    text: str
    start_offset: int
    end_offset: int
    heading: str | None


@dataclass(frozen=True, slots=True)
class Chunk:
    """A row of ``chunk``: a piece of a note's content, offsets into it, and the hash of
    the content it was cut from."""

    id: int
    note_id: UUID
    ordinal: int
    text: str
    start_offset: int
    end_offset: int
    heading: str | None
    content_hash: str


@dataclass(frozen=True, slots=True)
class ChunkEmbedding:
    """A row of ``chunk_embedding``: one chunk's vector in one embedding set, and the hash
    of the composed text it embeds."""

    set_id: int
    chunk_id: int
    note_id: UUID
    text_hash: str
    embedding: Vector


CHUNK = Table("chunk", Chunk)
CHUNK_EMBEDDING = Table("chunk_embedding", ChunkEmbedding)


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A stored chunk of a note and its text's hash in one set (None: not embedded)."""

    chunk: Chunk
    text_hash: str | None


@dataclass(frozen=True, slots=True)
class SemanticRow:
    """A note found by the semantic leg: its best chunk's cosine distance and id, how many
    chunks the candidate list held and of how many notes (None for an exact read)."""

    note_id: UUID
    distance: float
    chunk_id: int
    offered: int | None
    offered_notes: int | None = None


# What other features read of a note's vectors (through fortemi.retrieval.service). The
# newest set holding the note's chunk vectors is found per set, newest first, one probe of
# chunk_embedding's (set_id, note_id) index each: a note's chunks are not indexed by note
# alone, and a memory has a handful of sets.
_LATEST_SET_OF_NOTE = Query("""
SELECT s.id FROM embedding_set s
WHERE EXISTS (SELECT 1 FROM chunk_embedding e WHERE e.set_id = s.id AND e.note_id = :note_id)
ORDER BY s.id DESC LIMIT 1
""")
_NOTE_VECTORS = CHUNK_EMBEDDING.query(
    "SELECT embedding FROM {table} WHERE set_id = :set_id AND note_id = :note_id"
)
_SET_BY_ID = EMBEDDING_SET.query("SELECT {columns} FROM {table} WHERE id = :id")
_NEWEST_SET = Query("SELECT max(id) FROM embedding_set")
# Of the notes named, the live ones with at least one chunk and a vector in the set for
# every chunk (the Embedding job writes a note's chunks and vectors in one transaction).
_HELD_WHOLE = Query(
    """
    SELECT n.id FROM note n
    WHERE n.id = ANY(:note_ids::uuid[]) AND n.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM chunk c WHERE c.note_id = n.id)
      AND NOT EXISTS (
          SELECT 1 FROM chunk c
          WHERE c.note_id = n.id
            AND NOT EXISTS (SELECT 1 FROM chunk_embedding e
                            WHERE e.set_id = :set_id AND e.chunk_id = c.id))
    """
)


class RetrievalRepository:
    # -- the lexical index -----------------------------------------------------------------

    async def corpus(self, conn: Connection) -> tuple[int, float]:
        """(live documents, their average length) of the lexical index."""
        row = await conn.fetchrow(
            "SELECT count(*) AS docs, coalesce(avg(dl), 0) AS avgdl FROM lex_doc"
        )
        if row is None:
            raise RuntimeError("an aggregate returned no row")
        return int(row["docs"]), float(row["avgdl"])

    async def bm25(
        self,
        conn: Connection,
        bm25: Bm25,
        where: Where | None,
        fetch: int,
        first: int | None = None,
        given: Sequence[tuple[str, float]] | None = None,
    ) -> tuple[list[tuple[UUID, float]], int | None]:
        """The best ``fetch`` notes by BM25, best first, and, with ``first``, how many notes
        were ranked before ``where`` (built with ``bm25.args(given)`` leading) was checked.
        ``given``: the terms' weights, when their document frequencies are counted already."""
        weights = given is not None
        if where is None:
            rows = await conn.fetch(bm25_sql(None, fetch, weights=weights), *bm25.args(given))
        else:
            sql = bm25_sql(where.sql(), fetch, first, weights=weights)
            rows = await conn.fetch(sql, *where.args)
        ranked = int(rows[0]["ranked"]) if rows and first is not None else None
        return [(row["note_id"], float(row["score"])) for row in rows], ranked

    async def passing(self, conn: Connection, where: Where) -> set[UUID]:
        """Which of the notes ``where``'s leading value ($1, uuid[]) names pass it."""
        rows = await conn.fetch(
            f"SELECT note.id FROM note WHERE note.id = ANY($1::uuid[]) AND {where.sql()}",  # noqa: S608 - a Where's SQL; values are parameters
            *where.args,
        )
        return {row["id"] for row in rows}

    # -- embeddings ------------------------------------------------------------------------

    async def nearest(
        self,
        conn: Connection,
        chosen: EmbeddingSet,
        where: Where,
        chunks: int,
        fetch: int,
        *,
        scan: bool = False,
    ) -> list[SemanticRow]:
        """From the ``chunks`` chunks nearest ``where``'s leading vector ($1) in the set's
        HNSW index, the best per note, for up to ``fetch`` notes passing ``where``. With
        ``scan`` the ``chunks`` nearest are found exactly, by reading every vector of the set
        (a top-N sort by the selected distance, computed once a row, ties by chunk; the
        ``+ 0`` keeps the planner off the index)."""
        distance = f"e.embedding::{chosen.cast} <=> $1::{chosen.cast}"
        selected, order = (f"({distance}) + 0", "d, e.chunk_id") if scan else (distance, distance)
        # The set's id and the row counts are spliced in as constants (ours, integers): a
        # generic plan with the id as a parameter cannot use the set's partial index, and
        # with the counts as parameters custom plans were measured 3 to 10 times slower.
        rows = await conn.fetch(
            f"""
            WITH nearest AS MATERIALIZED (
                SELECT e.note_id, e.chunk_id, {selected} AS d
                FROM chunk_embedding e
                WHERE e.set_id = {int(chosen.id)}
                ORDER BY {order}
                LIMIT {int(chunks)}
            ),
            best AS (
                SELECT DISTINCT ON (note_id) note_id, chunk_id, d
                FROM nearest ORDER BY note_id, d, chunk_id
            )
            SELECT best.note_id, best.d, best.chunk_id,
                   (SELECT count(*) FROM nearest) AS offered,
                   (SELECT count(*) FROM best) AS offered_notes
            FROM best JOIN note ON note.id = best.note_id
            WHERE {where.sql()}
            ORDER BY best.d, best.note_id
            LIMIT {int(fetch)}
            """,  # noqa: S608 - the set's id and checked dimension, row counts; values are parameters
            *where.args,
        )
        return [
            SemanticRow(
                r["note_id"], float(r["d"]), r["chunk_id"], r["offered"], r["offered_notes"]
            )
            for r in rows
        ]

    async def exact(
        self, conn: Connection, chosen: EmbeddingSet, where: Where, fetch: int
    ) -> list[SemanticRow]:
        """As :meth:`nearest`, reading every chunk of the set that passes ``where`` (an
        expression the index does not serve)."""
        rows = await conn.fetch(
            f"""
            SELECT best.note_id, best.d, best.chunk_id
            FROM (
                SELECT DISTINCT ON (e.note_id) e.note_id, e.chunk_id,
                       (e.embedding::{chosen.cast} <=> $1::{chosen.cast}) + 0 AS d
                FROM chunk_embedding e JOIN note ON note.id = e.note_id
                WHERE e.set_id = {int(chosen.id)} AND {where.sql()}
                ORDER BY e.note_id, d, e.chunk_id
            ) AS best
            ORDER BY best.d, best.note_id
            LIMIT {int(fetch)}
            """,  # noqa: S608 - the set's id and row count are ours; values are parameters
            *where.args,
        )
        return [SemanticRow(r["note_id"], float(r["d"]), r["chunk_id"], None) for r in rows]

    async def has_embeddings(self, conn: Connection, chosen: EmbeddingSet) -> bool:
        return bool(
            await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM chunk_embedding WHERE set_id = $1)", chosen.id
            )
        )

    async def embedded_chunks(self, conn: Connection, chosen: EmbeddingSet) -> int:
        return int(
            await conn.fetchval("SELECT count(*) FROM chunk_embedding WHERE set_id = $1", chosen.id)
        )

    async def upsert_embeddings(
        self, conn: Connection, chosen: EmbeddingSet, rows: Sequence[ChunkEmbedding]
    ) -> None:
        """Store ``rows`` (all of set ``chosen``), replacing each chunk's previous vector in
        that set."""
        upsert = _upsert_embedding(chosen.cast)
        await conn.executemany(
            upsert.sql, [upsert.args(CHUNK_EMBEDDING.binds(row)) for row in rows]
        )

    async def latest_set_of_note(self, conn: Connection, note_id: UUID) -> int | None:
        """The newest set holding vectors of the note's chunks."""
        found = await conn.fetchval(
            _LATEST_SET_OF_NOTE.sql, *_LATEST_SET_OF_NOTE.args(note_id=note_id)
        )
        return None if found is None else int(found)

    async def newest_set(self, conn: Connection) -> int | None:
        found = await conn.fetchval(_NEWEST_SET.sql)
        return None if found is None else int(found)

    async def held_whole(
        self, conn: Connection, set_id: int, note_ids: Sequence[UUID]
    ) -> set[UUID]:
        """Those of ``note_ids`` that are live and have a vector in the set for every one
        of their chunks (and at least one chunk)."""
        rows = await conn.fetch(
            _HELD_WHOLE.sql, *_HELD_WHOLE.args(note_ids=list(note_ids), set_id=set_id)
        )
        return {row["id"] for row in rows}

    async def note_vectors(self, conn: Connection, set_id: int, note_id: UUID) -> list[Vector]:
        """The vectors of the note's chunks in the set (in no particular order)."""
        args = _NOTE_VECTORS.args(set_id=set_id, note_id=note_id)
        return [
            stored_vector(row["embedding"]) for row in await conn.fetch(_NOTE_VECTORS.sql, *args)
        ]

    async def embedding_set(self, conn: Connection, set_id: int) -> EmbeddingSet | None:
        row = await conn.fetchrow(_SET_BY_ID.sql, *_SET_BY_ID.args(id=set_id))
        return None if row is None else EMBEDDING_SET.from_record(row)

    async def notes_missing(self, conn: Connection, set_id: int) -> list[UUID]:
        """Live notes not held whole by set ``set_id``: never chunked, or with a chunk
        without a vector there."""
        rows = await conn.fetch(
            """
            SELECT n.id FROM note n
            WHERE n.deleted_at IS NULL
              AND (NOT EXISTS (SELECT 1 FROM chunk c WHERE c.note_id = n.id)
                   OR EXISTS (
                       SELECT 1 FROM chunk c
                       WHERE c.note_id = n.id
                         AND NOT EXISTS (SELECT 1 FROM chunk_embedding e
                                         WHERE e.set_id = $1 AND e.chunk_id = c.id)))
            ORDER BY n.id
            """,
            set_id,
        )
        return [row["id"] for row in rows]

    # -- chunks ----------------------------------------------------------------------------

    async def chunk_count(self, conn: Connection) -> int:
        return int(await conn.fetchval("SELECT count(*) FROM chunk"))

    async def chunks(self, conn: Connection, note_id: UUID, chosen: EmbeddingSet) -> list[ChunkRow]:
        """``note_id``'s chunks in order, each with its text hash in ``chosen``."""
        rows = await conn.fetch(_CHUNKS.sql, *_CHUNKS.args(note_id=note_id, set_id=chosen.id))
        return [ChunkRow(CHUNK.from_record(row), row["text_hash"]) for row in rows]

    async def replace_chunks(
        self, conn: Connection, note_id: UUID, content_hash: str, pieces: Sequence[NewChunk]
    ) -> list[int]:
        """Make ``pieces`` the note's chunks (their embeddings go with the old ones); the
        new chunks' ids, in ``pieces``' order."""
        await conn.execute("DELETE FROM chunk WHERE note_id = $1", note_id)
        columns = {name: [getattr(p, name) for p in pieces] for name in _PIECE_COLUMNS}
        args = _INSERT_CHUNKS.args(columns, note_id=note_id, content_hash=content_hash)
        return [row["id"] for row in await conn.fetch(_INSERT_CHUNKS.sql, *args)]

    async def chunk_texts(self, conn: Connection, chunk_ids: Sequence[int]) -> dict[int, str]:
        """The text of each chunk named (a chunk replaced since is absent)."""
        rows = await conn.fetch(
            "SELECT id, text FROM chunk WHERE id = ANY($1::bigint[])", list(chunk_ids)
        )
        return {row["id"]: row["text"] for row in rows}

    async def best_chunks(
        self, conn: Connection, note_ids: Sequence[UUID], text: str
    ) -> dict[UUID, str]:
        """For each note, the text of its chunk that best matches ``text``'s words (the
        first chunk when none does). Ranked on the chunk's stored tsvector: analysing every
        chunk's text again cost most of a lexical search's time (100 hits)."""
        rows = await conn.fetch(
            """
            SELECT DISTINCT ON (note_id) note_id, text FROM chunk
            WHERE note_id = ANY($1::uuid[])
            ORDER BY note_id, ts_rank(lex, websearch_to_tsquery('english', $2)) DESC, ordinal
            """,
            list(note_ids),
            text,
        )
        return {row["note_id"]: row["text"] for row in rows}


_CHUNKS = CHUNK.query(
    "SELECT {c.columns}, e.text_hash FROM {table} c "
    "LEFT JOIN chunk_embedding e ON e.chunk_id = c.id AND e.set_id = :set_id "
    "WHERE c.note_id = :note_id ORDER BY c.ordinal"
)

# A note's chunks in one statement: the columns that differ between chunks as parallel
# arrays (one bind each, named after the column), the note and its content hash once.
_PIECE_COLUMNS = tuple(field.name for field in dataclasses.fields(NewChunk))
_PIECE_TYPES = {"ordinal": "int", "text": "text", "start_offset": "int", "end_offset": "int"}
_INSERT_CHUNKS = CHUNK.query(
    "INSERT INTO {table} (note_id, content_hash, {pieces}) "
    "SELECT :note_id, :content_hash, p.* FROM unnest({arrays}) AS p({pieces}) "
    "ORDER BY p.ordinal RETURNING id",
    pieces=", ".join(_PIECE_COLUMNS),
    arrays=", ".join(f":{name}::{_PIECE_TYPES.get(name, 'text')}[]" for name in _PIECE_COLUMNS),
)


@functools.cache
def _upsert_embedding(cast: str) -> Query:
    """The upsert of a set's vectors; ``cast`` (the set's checked dimension, ours) rejects
    a vector of another size."""
    binds = ", ".join(
        f":{name}::{cast}" if name == "embedding" else f":{name}"
        for name in CHUNK_EMBEDDING.columns
    )
    return CHUNK_EMBEDDING.query(
        "INSERT INTO {table} ({columns}) VALUES ({binds}) "
        "ON CONFLICT (set_id, chunk_id) DO UPDATE "
        "SET text_hash = EXCLUDED.text_hash, embedding = EXCLUDED.embedding",
        binds=binds,
    )


# The lexical leg's statement, in parts. Parameters: $1 query text, $2 documents, $3 average
# length, $4 k1, $5 b, $6 prefixes, then those of the note condition.
#
# Terms are the query's lexemes plus the indexed words starting with each prefix, found by
# skipping through lex_posting's primary key ("C" collation: a prefix is a key range) one
# probe per distinct word, up to ``PREFIX_EXPANSIONS`` of them. A term counts once per
# occurrence in the query (its weight is the query frequency times the IDF), as Lucene
# scores a query that repeats a term clause: a question that says "retrieval" three times
# is mostly about retrieval. Each term's document frequency is one count on the index.
TERMS_CTE = rf"""
    terms AS (
        SELECT lexeme, sum(qtf)::float8 AS qtf
        FROM (
            SELECT t.lexeme COLLATE "C" AS lexeme,
                   coalesce(array_length(t.positions, 1), 1) AS qtf
            FROM unnest(to_tsvector('english', $1)) AS t
            UNION ALL
            SELECT e.lexeme, 1 FROM unnest($6::text[]) AS p(prefix),
            LATERAL (
                WITH RECURSIVE walk (lexeme, n) AS (
                    (SELECT lexeme, 1 FROM lex_posting
                     WHERE lexeme >= p.prefix COLLATE "C" ORDER BY lexeme LIMIT 1)
                    UNION ALL
                    SELECT (SELECT lp.lexeme FROM lex_posting lp
                            WHERE lp.lexeme > walk.lexeme ORDER BY lp.lexeme LIMIT 1),
                           walk.n + 1
                    FROM walk
                    WHERE starts_with(walk.lexeme, p.prefix) AND walk.n < {PREFIX_EXPANSIONS}
                )
                SELECT lexeme FROM walk WHERE starts_with(lexeme, p.prefix)
            ) AS e
        ) AS occurrences
        GROUP BY lexeme
    )"""  # noqa: S608 - a constant of ours; every value is a parameter

# Okapi BM25 with Lucene's IDF, summed over the query's terms per note, rounded to 1e-9 so
# that sums differing only in the order of addition tie (and ties go by note id), in this
# statement and in the pruned path's (fortemi.retrieval.postings_repository) alike.
_WEIGHTED = """
    weighted AS (
        SELECT terms.lexeme,
               terms.qtf * ln(1 + ($2::float8 - d.df + 0.5) / (d.df + 0.5)) AS weight
        FROM terms, LATERAL (
            SELECT count(*)::float8 AS df FROM lex_posting WHERE lexeme = terms.lexeme
        ) AS d
    ),"""
# Each note's score from ``weighted`` (lexeme, weight): $3 average length, $4 k1, $5 b.
_SUMMED = """
    scored AS (
        SELECT lp.note_id,
               round(sum(weighted.weight * lp.tf * ($4::float8 + 1)
                   / (lp.tf + $4::float8 * (1 - $5::float8 + $5::float8 * lp.dl / $3::float8)))
                   * 1e9::float8) / 1e9::float8
               AS score
        FROM weighted JOIN lex_posting lp ON lp.lexeme = weighted.lexeme
        GROUP BY lp.note_id
    )"""


# The same ranking with the terms' weights given ($1 lexemes, $2 weights, then $3..$5 as
# above): the pruned path counted the document frequencies already.
_GIVEN = """
    weighted AS (
        SELECT w.lexeme COLLATE "C" AS lexeme, w.weight
        FROM unnest($1::text[], $2::float8[]) AS w(lexeme, weight)
    ),"""


def bm25_sql(
    condition: str | None, fetch: int, first: int | None = None, *, weights: bool = False
) -> str:
    """The lexical leg's statement for the best ``fetch`` notes (parameters above; then
    those of ``condition``, a WHERE clause on ``note``; None: no note is read). Row counts
    are constants, not parameters: they shape the plan, and a generic plan made without
    them was measured slower. With ``first``, only the ``first`` best notes by score are
    checked against ``condition``, by primary key, and ``ranked`` says how many there
    were; without it, every matching note is checked before ranking.
    """
    source_cte = _GIVEN if weights else f"{TERMS_CTE},{_WEIGHTED}"
    if condition is None:
        source = "scored"
    elif first is None:
        source = f"scored JOIN note ON note.id = scored.note_id WHERE {condition}"
    else:
        source = f"""(
            SELECT scored.*, count(*) OVER () AS ranked FROM scored
            ORDER BY score DESC, note_id LIMIT {int(first)}
        ) AS scored JOIN note ON note.id = scored.note_id WHERE {condition}"""  # noqa: S608
    return f"""
        WITH {source_cte}{_SUMMED}
        SELECT scored.note_id, scored.score{", scored.ranked" if first else ""}
        FROM {source}
        ORDER BY scored.score DESC, scored.note_id
        LIMIT {int(fetch)}
    """  # noqa: S608 - fixed fragments; every value is a parameter
