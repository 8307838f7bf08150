"""Seeded synthetic notes, search queries and embedding vectors for the search benchmark.

Text: words drawn from a fixed English vocabulary of 20,000 words with Zipf weights (rank
r weighs 1 / (r + 2.7), Zipf-Mandelbrot), so a few words are in most notes and most words
in few. The vocabulary is the whole-word entries of the local embedding model's WordPiece
vocabulary, which BERT lists by corpus frequency: real English words, in frequency order,
that the model knows. Each note also has one of 64 topics: a fifth of its words come from
that topic's list of 200 long-tail words (ranks 2,000 to 20,000), so notes cluster, by
words and by meaning. 60 to 150 words in sentences of 6 to 18, a title of 3 to 6 words.

Queries come in two kinds, reported apart because they cost the lexical leg very
differently: ``selective`` ones are 2 to 6 words of one topic's list (at the median, 2% of
the notes hold one of the query's words); ``common`` ones are 2 to 6 of the 200 most
frequent indexable words (a third of the notes).

Vectors (:func:`synthesize`): real vectors of a sample of the notes, embedded by the real
model, and for every other note its topic's mean vector plus Gaussian noise with the
sample's within-topic covariance (all its principal axes, each with its spread),
normalised. Checked once against 10,000 notes all embedded by the model: the cosine of a
note to its nearest neighbour averages 0.537 (real: 0.544), and pgvector's HNSW (m 16,
ef_construction 64) finds 0.837 of the exact top 10 at ef_search 150 (real: 0.865). So the
synthetic set is a little harder than real vectors of the same text. Mixtures of real
vectors and projections onto 32 or 64 principal axes came out far easier (nearest
neighbour 0.63 to 0.93, recall 0.89 to 0.97), so they are not used.

:func:`load` writes notes, chunks and vectors straight into a memory's tables, the fastest
way in that leaves them as the service would (see its docstring). :class:`SqlSearch` is the
baseline the benchmark compares the server with: the same search asked of PostgreSQL
directly, one statement per search.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from uuid import UUID

import asyncpg
import blake3
import numpy as np
import numpy.typing as npt
from pgvector.asyncpg import register_vector

from fortemi.platform.database import Database, memory_schema
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSets, default_ef_search

__all__ = [
    "CHUNKS",
    "FETCH",
    "LIMIT",
    "RRF_K",
    "Corpus",
    "Ingest",
    "Note",
    "Query",
    "QueryKind",
    "SqlSearch",
    "load",
    "server_ef",
    "synthesize",
    "vocabulary",
]

VOCABULARY_SIZE = 20_000
TOPICS = 64
TOPIC_WORDS = 200
TOPIC_SHARE = 0.2
_TOPIC_RANKS = (2000, VOCABULARY_SIZE)  # topic words: from the long tail
_COMMON_RANKS = 200  # common query words: the most frequent indexable ones
_ACTOR = "bench"
_BATCH = 5000  # notes per COPY, each in its own transaction
_PROGRESS = 10.0  # seconds between progress lines

QueryKind = Literal["selective", "common"]


@dataclass(frozen=True, slots=True)
class Note:
    title: str
    content: str
    topic: int


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    kind: QueryKind
    topic: int


def vocabulary(model_dir: Path, size: int = VOCABULARY_SIZE) -> list[str]:
    """The ``size`` most frequent whole English words of a BERT ``tokenizer.json``."""
    vocab = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    pieces: dict[str, int] = vocab["model"]["vocab"]
    words = [w for w, _ in sorted(pieces.items(), key=lambda item: item[1])]
    # The single letters come first (the character set), not by frequency: left out.
    words = [w for w in words if w.isascii() and w.isalpha() and w.islower() and len(w) > 1]
    if len(words) < size:
        raise ValueError(f"{model_dir}: only {len(words)} whole words, {size} wanted")
    return words[:size]


class Corpus:
    """Notes and queries over ``words`` (most frequent first), all from ``seed``."""

    def __init__(self, words: Sequence[str], seed: int) -> None:
        self.words = np.array(words, dtype=object)
        ranks = np.arange(len(words), dtype=np.float64)
        weights = 1.0 / (ranks + 2.7)
        self._p = weights / weights.sum()
        self._seed = seed
        rng = np.random.default_rng([seed, 0])
        low, high = _TOPIC_RANKS
        self.topic_words = np.stack(
            [rng.choice(np.arange(low, high), TOPIC_WORDS, replace=False) for _ in range(TOPICS)]
        )

    def notes(self, count: int) -> list[Note]:
        rng = np.random.default_rng([self._seed, 1, count])
        topics = rng.integers(0, TOPICS, count)
        lengths = rng.integers(60, 151, count)
        title_lengths = rng.integers(3, 7, count)
        words = self._draw(rng, np.repeat(topics, lengths), TOPIC_SHARE)
        titles = self._draw(rng, np.repeat(topics, title_lengths), 0.6)
        notes: list[Note] = []
        at = title_at = 0
        for i in range(count):
            body = words[at : at + lengths[i]]
            at += lengths[i]
            title = titles[title_at : title_at + title_lengths[i]]
            title_at += title_lengths[i]
            notes.append(
                Note(
                    title=" ".join(title).title(),
                    content=_sentences(body, rng),
                    topic=int(topics[i]),
                )
            )
        return notes

    def queries(self, count: int, indexable: Callable[[str], bool]) -> list[Query]:
        """``count`` queries, selective and common in turn, of distinct indexable words."""
        rng = np.random.default_rng([self._seed, 2, count])
        common = [w for w in self.words[:_COMMON_RANKS] if indexable(w)]
        queries: list[Query] = []
        for i in range(count):
            topic = int(rng.integers(0, TOPICS))
            size = int(rng.integers(2, 7))
            kind: QueryKind = "selective" if i % 2 == 0 else "common"
            if kind == "selective":
                pool = [w for w in self.words[self.topic_words[topic]] if indexable(w)]
            else:
                pool = common
            picked = rng.choice(len(pool), size=min(size, len(pool)), replace=False)
            queries.append(Query(" ".join(pool[j] for j in picked), kind, topic))
        return queries

    def _draw(
        self, rng: np.random.Generator, topics: npt.NDArray[np.int64], share: float
    ) -> list[str]:
        """One word per entry of ``topics``: from the topic's list with chance ``share``,
        else from the whole vocabulary by Zipf weight."""
        n = len(topics)
        zipf = rng.choice(len(self.words), size=n, p=self._p)
        own = self.topic_words[topics, rng.integers(0, TOPIC_WORDS, n)]
        chosen = np.where(rng.random(n) < share, own, zipf)
        drawn: list[str] = self.words[chosen].tolist()
        return drawn


def _sentences(words: Sequence[str], rng: np.random.Generator) -> str:
    out: list[str] = []
    at = 0
    while at < len(words):
        size = int(rng.integers(6, 19))
        sentence = " ".join(words[at : at + size])
        at += size
        out.append(sentence[:1].upper() + sentence[1:] + ".")
    return " ".join(out)


def synthesize(
    sample: npt.NDArray[np.float32],
    sample_topics: npt.NDArray[np.int64],
    topics: npt.NDArray[np.int64],
    seed: int,
) -> npt.NDArray[np.float32]:
    """Unit vectors for notes of ``topics``; the first ``len(sample)`` are the sample's.

    Each other row is its topic's mean over the sample (the overall mean for a topic the
    sample missed) plus noise drawn from the sample's within-topic covariance: Gaussian
    coefficients on its principal axes, scaled by each axis's standard deviation.
    """
    n, dimension = sample.shape
    if n < 2 or len(topics) < n:
        raise ValueError("need a sample of at least 2 vectors, and at least as many notes")
    data = sample.astype(np.float64)
    overall = data.mean(axis=0)
    means = np.tile(overall, (TOPICS, 1))
    for topic in range(TOPICS):
        members = data[sample_topics == topic]
        if len(members):
            means[topic] = members.mean(axis=0)
    residuals = data - means[sample_topics]
    _, spread, axes = np.linalg.svd(residuals, full_matrices=False)
    scale = spread / math.sqrt(max(1, n - 1))  # standard deviation along each axis
    out = np.empty((len(topics), dimension), dtype=np.float32)
    out[:n] = sample
    rng = np.random.default_rng([seed, 3])
    for start in range(n, len(topics), 10_000):
        part = topics[start : start + 10_000]
        noise = (rng.standard_normal((len(part), len(scale))) * scale) @ axes
        rows = means[part] + noise
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        out[start : start + len(part)] = rows
    return out


@dataclass
class Ingest:
    notes: float = 0.0
    vectors: float = 0.0
    hnsw: float = 0.0
    vacuum: float = 0.0
    sizes: dict[str, str] = field(default_factory=dict)


def _hash(text: str) -> str:
    return blake3.blake3(text.encode()).hexdigest()


async def load(
    db: Database,
    memory: str,
    notes: Sequence[Note],
    vectors: npt.NDArray[np.float32],
    model: str,
    composition: DocumentComposition,
    seed: int,
) -> tuple[Ingest, int]:
    """``notes`` with one chunk and one vector each into ``memory``; the set's id.

    Notes go in by COPY, in batches, so the note triggers fill the lexical index as they
    do for any insert (the history tables, which search never reads, stay empty). The
    embedding set is the one ``EmbeddingSets.ensure`` makes for ``model``; its HNSW index
    is dropped for the load and built once after it, from its own definition. Then
    VACUUM ANALYZE, as autovacuum would run soon after such a load: the BM25 leg's
    index-only scans need the visibility map, and every plan needs statistics.
    """
    ingest, rng = Ingest(), random.Random(seed)
    ids = [UUID(int=rng.getrandbits(128), version=4) for _ in notes]
    hashes = ["blake3:" + _hash(n.content) for n in notes]
    started = last = time.monotonic()
    for start in range(0, len(notes), _BATCH):
        rows = [
            (ids[i], notes[i].title, notes[i].content, hashes[i], _ACTOR, _ACTOR)
            for i in range(start, min(start + _BATCH, len(notes)))
        ]
        async with db.memory_transaction(memory) as conn:
            await conn.copy_records_to_table(
                "note",
                records=rows,
                columns=["id", "title", "content", "content_hash", "created_by", "updated_by"],
            )
        if time.monotonic() - last >= _PROGRESS:
            last = time.monotonic()
            print(f"  {memory}: {start + len(rows)}/{len(notes)} notes", flush=True)
    ingest.notes = time.monotonic() - started

    started = time.monotonic()
    async with db.memory_transaction(memory) as conn:
        chosen = await EmbeddingSets().ensure(conn, model, vectors.shape[1], composition)
        # A bulk load builds the index once, after the rows, with the set's own definition.
        index_sql: str = await conn.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname = $1",
            chosen.index_name,
        )
        await conn.execute(f"DROP INDEX {chosen.index_name}")
        await conn.copy_records_to_table(
            "chunk",
            records=[
                (ids[i], 0, n.content, 0, len(n.content), None, hashes[i])
                for i, n in enumerate(notes)
            ],
            columns=[
                "note_id",
                "ordinal",
                "text",
                "start_offset",
                "end_offset",
                "heading",
                "content_hash",
            ],
        )
        chunk_of = {
            r["note_id"]: r["id"] for r in await conn.fetch("SELECT id, note_id FROM chunk")
        }
        await register_vector(conn)
        await conn.copy_records_to_table(
            "chunk_embedding",
            records=[
                (
                    chosen.id,
                    chunk_of[ids[i]],
                    ids[i],
                    _hash(composition.document(n.title, n.content, ())),
                    vectors[i],
                )
                for i, n in enumerate(notes)
            ],
            columns=["set_id", "chunk_id", "note_id", "text_hash", "embedding"],
        )
    ingest.vectors = time.monotonic() - started

    started = time.monotonic()
    async with db.memory_transaction(memory) as conn:
        # The whole graph in memory: past maintenance_work_mem pgvector builds on disk.
        await conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        await conn.execute(index_sql)
    ingest.hnsw = time.monotonic() - started

    started = time.monotonic()
    schema = memory_schema(memory)
    tables = ("note", "lex_posting", "lex_doc", "chunk", "chunk_embedding")
    async with db.connection() as conn:
        await conn.execute(f"VACUUM (ANALYZE) {', '.join(f'{schema}.{t}' for t in tables)}")
        sizes = await conn.fetch(
            "SELECT c.relname, pg_size_pretty(pg_total_relation_size(c.oid)) AS size "
            "FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = $1 AND c.relname = ANY($2::text[])",
            schema.strip('"'),
            [*tables[:2], "chunk_embedding", chosen.index_name],
        )
    ingest.vacuum = time.monotonic() - started
    ingest.sizes = {r["relname"]: r["size"] for r in sizes}
    return ingest, chosen.id


# -- the SQL baseline ---------------------------------------------------------------------

# What SearchService does for limit 10: each leg over-fetches max(3 x limit, 50) notes; the
# semantic leg asks the index for 3 x that many chunks with hnsw.ef_search at least that,
# and at least the default for the set's size when the client sets none.
LIMIT = 10
FETCH = 50
CHUNKS = 150


def server_ef(chunks: int) -> int:
    """The hnsw.ef_search the server uses for limit 10 on a set of ``chunks`` vectors."""
    return max(default_ef_search(chunks), CHUNKS)


RRF_K = 60
BM25_K1, BM25_B = 1.2, 0.75  # fortemi.retrieval.search's
_BM25 = f"""
    * ({BM25_K1}::float8 + 1)
    / (lp.tf + {BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * lp.dl / $3::float8))
"""


def _lexical_sql(schema: str) -> str:
    """The lexical leg's BM25 (its formula and order, without prefix expansion: the
    queries have none), written as the least work for the database: each term's document
    frequency counted once, and the note filter applied to the best 4 x FETCH candidates
    only (by primary key), not to every note that has a query word, as the leg does when it
    has a filter (it falls back to filtering before ranking when fewer than FETCH survive; here
    every note passes). $1 query, $2 documents, $3 average length; (note_id, score, rank)."""
    return f"""
        terms AS (
            SELECT t.lexeme, ln(1 + ($2::float8 - d.df + 0.5) / (d.df + 0.5)) AS idf
            FROM (SELECT DISTINCT lexeme COLLATE "C" AS lexeme
                  FROM unnest(to_tsvector('english', $1))) AS t,
            LATERAL (SELECT count(*)::float8 AS df FROM {schema}.lex_posting
                     WHERE lexeme = t.lexeme) AS d
        ),
        scored AS (
            SELECT lp.note_id, sum(terms.idf * lp.tf {_BM25}) AS score
            FROM terms JOIN {schema}.lex_posting lp ON lp.lexeme = terms.lexeme
            GROUP BY lp.note_id
            ORDER BY score DESC, lp.note_id
            LIMIT {4 * FETCH}
        ),
        lexical AS (
            SELECT scored.note_id, scored.score,
                   row_number() OVER (ORDER BY scored.score DESC, scored.note_id) AS rank
            FROM scored JOIN {schema}.note ON note.id = scored.note_id
            WHERE note.deleted_at IS NULL
            ORDER BY scored.score DESC, scored.note_id
            LIMIT {FETCH}
        )"""  # noqa: S608 - a validated schema and constants


class SqlSearch:
    """The baseline: each search is one statement, one round trip, no transaction.

    Tables are schema-qualified; the set's id and dimension are spliced in as constants so
    the planner always matches the partial HNSW index. ``hnsw.ef_search`` is set once for
    the session, at the server's value for the set's size.
    """

    def __init__(
        self, conn: asyncpg.Connection, schema: str, set_id: int, dimension: int, ef: int
    ) -> None:
        self._conn = conn
        self._ef = ef
        vec = f"vector({int(dimension)})"
        distance = f"e.embedding::{vec} <=> $4::{vec}"
        top = f"""
            SELECT h.note_id, h.score, n.title, c.text FROM hits h
            JOIN {schema}.note n ON n.id = h.note_id
            LEFT JOIN LATERAL (
                SELECT text FROM {schema}.chunk WHERE chunk.note_id = h.note_id
                ORDER BY ordinal LIMIT 1
            ) c ON true
            ORDER BY h.score DESC, h.note_id"""  # noqa: S608
        self.fused_sql = f"""
            WITH {_lexical_sql(schema)},
            nearest AS (
                SELECT e.note_id, {distance} AS d
                FROM {schema}.chunk_embedding e
                WHERE e.set_id = {int(set_id)}
                ORDER BY {distance}
                LIMIT {CHUNKS}
            ),
            semantic AS (
                SELECT best.note_id, row_number() OVER (ORDER BY best.d, best.note_id) AS rank
                FROM (SELECT DISTINCT ON (note_id) note_id, d FROM nearest
                      ORDER BY note_id, d) AS best
                JOIN {schema}.note ON note.id = best.note_id
                WHERE note.deleted_at IS NULL
                ORDER BY best.d, best.note_id
                LIMIT {FETCH}
            ),
            hits AS (
                SELECT note_id, sum(1.0::float8 / ({RRF_K} + rank)) AS score
                FROM (SELECT note_id, rank FROM lexical
                      UNION ALL SELECT note_id, rank FROM semantic) AS legs
                GROUP BY note_id
                ORDER BY score DESC, note_id
                LIMIT {LIMIT}
            )
            {top}
        """  # noqa: S608 - a validated schema and constants
        self.lexical_sql = f"""
            WITH {_lexical_sql(schema)},
            hits AS (SELECT note_id, score FROM lexical ORDER BY rank LIMIT {LIMIT})
            {top}
        """  # noqa: S608 - a validated schema and constants
        nearest = f"""
            SELECT e.chunk_id FROM {schema}.chunk_embedding e WHERE e.set_id = {int(set_id)}
            ORDER BY {{order}} LIMIT {LIMIT}
        """  # noqa: S608 - a validated schema and constants
        self.hnsw_sql = nearest.format(order=distance.replace("$4", "$1"))
        self.exact_sql = nearest.format(order=f"({distance.replace('$4', '$1')}) + 0, 1")

    @classmethod
    async def connect(
        cls, dsn: str, schema: str, set_id: int, dimension: int, ef: int
    ) -> SqlSearch:
        conn = await asyncpg.connect(dsn)
        await conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        return cls(conn, schema, set_id, dimension, ef)

    async def fused(self, text: str, docs: int, avgdl: float, vector: str) -> list[UUID]:
        rows = await self._conn.fetch(self.fused_sql, text, docs, avgdl, vector)
        return [r["note_id"] for r in rows]

    async def lexical(self, text: str, docs: int, avgdl: float) -> list[UUID]:
        rows = await self._conn.fetch(self.lexical_sql, text, docs, avgdl)
        return [r["note_id"] for r in rows]

    async def nearest(self, vector: str, *, exact: bool, ef: int) -> tuple[float, list[int]]:
        await self._conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        started = time.perf_counter()
        rows = await self._conn.fetch(self.exact_sql if exact else self.hnsw_sql, vector)
        elapsed = time.perf_counter() - started
        await self._conn.execute(f"SET hnsw.ef_search = {int(self._ef)}")
        return elapsed, [r["chunk_id"] for r in rows]

    async def corpus(self, schema: str) -> tuple[int, float]:
        row = await self._conn.fetchrow(
            f"SELECT count(*) AS docs, coalesce(avg(dl), 0)::float8 AS avgdl FROM {schema}.lex_doc"  # noqa: S608
        )
        assert row is not None
        return int(row["docs"]), float(row["avgdl"])

    async def matching(self, schema: str, text: str) -> int:
        """Notes with at least one of the query's terms: the lexical leg's work."""
        found: int = await self._conn.fetchval(
            f"SELECT count(DISTINCT note_id) FROM {schema}.lex_posting "  # noqa: S608
            "WHERE lexeme IN (SELECT lexeme FROM unnest(to_tsvector('english', $1)))",
            text,
        )
        return found

    async def close(self) -> None:
        await self._conn.close()
