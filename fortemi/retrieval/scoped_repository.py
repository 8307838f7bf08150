"""The SQL of scoped retrieval (:mod:`fortemi.retrieval.scoped`): TF-IDF over a set of
notes from the inverted index, the chunks of the best notes with their lexical and
metadata scores, and exact cosine over those chunks' stored vectors. Kept apart from
:mod:`fortemi.retrieval.repository` (already past 400 lines); the tables are the same
(retrieval's), and the conditions on ``note`` come as a :class:`Where` built by the notes
package, applied in a sub-select on ``note`` alone so its unqualified columns are
unambiguous.

Every statement runs in the caller's memory transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.platform.database import Connection
from fortemi.platform.sql import Where
from fortemi.retrieval.sets import EmbeddingSet

__all__ = ["ChunkLexical", "DocScore", "ScopedRepository", "TermWeight"]


@dataclass(frozen=True, slots=True)
class TermWeight:
    """A question lexeme: how often the question says it, and its IDF within the scope."""

    lexeme: str
    qtf: float
    idf: float


@dataclass(frozen=True, slots=True)
class DocScore:
    note_id: UUID
    score: float
    project: str | None
    skill: str | None


@dataclass(frozen=True, slots=True)
class ChunkLexical:
    """A chunk of a routed note: what it says, where, and how its words match."""

    chunk_id: int
    note_id: UUID
    ordinal: int
    heading: str | None
    text: str
    title: str
    path: str | None
    project: str | None
    skill: str | None
    tfidf: float  # sum over the question's lexemes of qtf * (1 + ln tf) * idf in the chunk
    metadata: float  # qtf * idf of lexemes in own heading and first sentence; key terms half
    matched: float  # qtf * idf of the lexemes in the chunk's text or the note's key terms


# $1 the question; the scope's note condition follows (a sub-select on note alone). One
# statement, one row: the question's lexemes with their IDF within the scope, the scope's
# size, and the best notes. N is the number of indexed (live, non-empty) notes in scope.
# The question's postings in scope (``hits``) are read once, from lex_posting's primary
# key (lexeme, note_id) as an index-only scan: one index range per question lexeme, never
# a scan of the scope's postings; df counts them per lexeme and the scores sum them.
# A note's terms are summed in lexeme order (bytewise, the order of a tsvector), so equal
# notes score bit for bit the same whatever order the join produced.
_ROUTE = """
WITH terms AS (
    SELECT t.lexeme COLLATE "C" AS lexeme,
           coalesce(array_length(t.positions, 1), 1)::float8 AS qtf
    FROM unnest(to_tsvector('english', $1)) AS t
),
scope AS MATERIALIZED (
    SELECT id, project, skill FROM note WHERE {where}
),
n AS (
    SELECT count(*)::float8 AS docs FROM scope JOIN lex_doc d ON d.note_id = scope.id
),
hits AS MATERIALIZED (
    SELECT lp.lexeme COLLATE "C" AS lexeme, lp.note_id, lp.tf
    FROM terms JOIN lex_posting lp ON lp.lexeme = terms.lexeme
    WHERE lp.note_id IN (SELECT id FROM scope)
),
w AS MATERIALIZED (
    SELECT terms.lexeme, terms.qtf, ln(n.docs / d.df) + 1 AS idf
    FROM terms, n, (SELECT lexeme, count(*)::float8 AS df FROM hits GROUP BY lexeme) AS d
    WHERE d.lexeme = terms.lexeme
),
best AS (
    SELECT h.note_id, sum(w.qtf * w.idf * (1 + ln(h.tf)) ORDER BY w.lexeme) AS score
    FROM w JOIN hits h ON h.lexeme = w.lexeme
    GROUP BY h.note_id
    ORDER BY score DESC, h.note_id
    LIMIT {limit}
)
SELECT n.docs, weighed.lexemes, weighed.qtfs, weighed.idfs,
       found.ids, found.scores, found.projects, found.skills
FROM n,
     (SELECT array_agg(lexeme::text ORDER BY lexeme) AS lexemes,
             array_agg(qtf ORDER BY lexeme) AS qtfs,
             array_agg(idf ORDER BY lexeme) AS idfs
      FROM w) AS weighed,
     (SELECT array_agg(best.note_id ORDER BY best.score DESC, best.note_id) AS ids,
             array_agg(best.score ORDER BY best.score DESC, best.note_id) AS scores,
             array_agg(scope.project ORDER BY best.score DESC, best.note_id) AS projects,
             array_agg(scope.skill ORDER BY best.score DESC, best.note_id) AS skills
      FROM best JOIN scope ON scope.id = best.note_id) AS found
"""

# $1 notes, $2 lexemes, $3 weights. A chunk's words are its stored ``lex`` (migration
# 0008), analysed once when the chunk was written. The metadata match: the question's lexemes in the
# chunk's own heading (the last part of its heading path) and its first sentence (its
# text after the heading lines, up to the first sentence end, at most 300 characters),
# plus half as much for those in the note's key terms (title, tags, front-matter
# aliases), which every chunk of the note shares.
_CHUNKS = """
WITH w AS (
    SELECT lexeme COLLATE "C" AS lexeme, weight
    FROM unnest($2::text[], $3::float8[]) AS w(lexeme, weight)
),
n AS MATERIALIZED (
    SELECT id, title, project, skill, metadata ->> 'path' AS path,
           to_tsvector('english', concat_ws(' ',
               title, array_to_string(tags, ' '), metadata ->> 'aliases')) AS keys
    FROM note WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL
)
SELECT c.id, c.note_id, c.ordinal, c.heading, c.text, n.title, n.project, n.skill, n.path,
       coalesce((SELECT sum(w.weight * (1 + ln(coalesce(array_length(t.positions, 1), 1))))
                 FROM unnest(c.lex) AS t JOIN w ON w.lexeme = t.lexeme COLLATE "C"), 0)
           AS tfidf,
       coalesce((SELECT sum(w.weight)
                 FROM unnest(v.lead) AS t JOIN w ON w.lexeme = t.lexeme COLLATE "C"), 0)
       + 0.5 * coalesce((SELECT sum(w.weight)
                 FROM unnest(n.keys) AS t JOIN w ON w.lexeme = t.lexeme COLLATE "C"), 0)
           AS meta,
       coalesce((SELECT sum(w.weight) FROM w
                 WHERE w.lexeme IN (SELECT t.lexeme COLLATE "C"
                                    FROM unnest(c.lex || n.keys) AS t)), 0) AS matched
FROM chunk c
JOIN n ON n.id = c.note_id,
LATERAL (
    SELECT to_tsvector('english', concat_ws(' ',
               regexp_replace(c.heading, '^.* > ', ''),
               substring(left(regexp_replace(c.text, '^(\\s*#[^\\n]*\\n)+', ''), 300)
                         from '^[^.!?]*[.!?]?'))) AS lead
    OFFSET 0  -- evaluated once per chunk, not once per use
) AS v
WHERE c.note_id = ANY($1::uuid[])
ORDER BY c.note_id, c.ordinal
"""


class ScopedRepository:
    async def route(
        self, conn: Connection, question: str, scope: Where, limit: int
    ) -> tuple[list[TermWeight], int, list[DocScore]]:
        """The question's lexemes (``to_tsvector('english', ...)``, as the index) with
        their IDF within ``scope`` (built with the question as its leading value), the
        number of indexed notes in scope, and its best ``limit`` notes by TF-IDF, best
        first. IDF is ``ln(N / df) + 1`` (natural log); a lexeme no note in scope holds
        gets none (it cannot match). A note scores the sum over the question's lexemes of
        ``qtf * idf * (1 + ln tf)``."""
        row = await conn.fetchrow(_ROUTE.format(where=scope.sql(), limit=int(limit)), *scope.args)
        if row is None:
            raise RuntimeError("an aggregate returned no row")
        weights = [
            TermWeight(lexeme, float(qtf), float(idf))
            for lexeme, qtf, idf in zip(
                row["lexemes"] or (), row["qtfs"] or (), row["idfs"] or (), strict=True
            )
        ]
        columns = [row[name] or () for name in ("ids", "scores", "projects", "skills")]
        docs = [
            DocScore(note_id, float(score), project, skill)
            for note_id, score, project, skill in zip(*columns, strict=True)
        ]
        return weights, int(row["docs"]), docs

    async def chunks(
        self, conn: Connection, notes: Sequence[UUID], weights: Sequence[TermWeight]
    ) -> list[ChunkLexical]:
        """Every chunk of ``notes`` with its TF-IDF and metadata-match scores."""
        if not notes:
            return []
        rows = await conn.fetch(
            _CHUNKS,
            list(notes),
            [w.lexeme for w in weights],
            [w.qtf * w.idf for w in weights],
        )
        return [_chunk(row) for row in rows]

    async def cosines(
        self,
        conn: Connection,
        chosen: EmbeddingSet,
        vector: npt.NDArray[np.float32],
        notes: Sequence[UUID],
    ) -> dict[int, float]:
        """Chunk id → exact cosine similarity to ``vector`` for the chunks of ``notes`` in
        the set (through its (set_id, note_id) index; no HNSW: these few are all read)."""
        if not notes:
            return {}
        rows = await conn.fetch(
            f"""
            SELECT e.chunk_id, 1 - (e.embedding::{chosen.cast} <=> $1::{chosen.cast}) AS cos
            FROM chunk_embedding e
            WHERE e.set_id = {int(chosen.id)} AND e.note_id = ANY($2::uuid[])
            """,  # noqa: S608 - the set's id and checked dimension are ours; values are parameters
            vector,
            list(notes),
        )
        return {int(row["chunk_id"]): float(row["cos"]) for row in rows}

    async def embedded_in_scope(self, conn: Connection, chosen: EmbeddingSet, scope: Where) -> int:
        """How many chunk vectors of the set a semantic search over all of ``scope`` (no
        leading values) would score."""
        return int(
            await conn.fetchval(
                f"""
                SELECT count(*) FROM chunk_embedding e
                WHERE e.set_id = {int(chosen.id)}
                  AND e.note_id IN (SELECT id FROM note WHERE {scope.sql()})
                """,  # noqa: S608 - the set's id; the condition's values are parameters
                *scope.args,
            )
        )

    async def chunks_in_scope(self, conn: Connection, scope: Where) -> int:
        """How many chunks the notes of ``scope`` (no leading values) have."""
        return int(
            await conn.fetchval(
                f"SELECT count(*) FROM chunk c "  # noqa: S608 - the condition's values are parameters
                f"WHERE c.note_id IN (SELECT id FROM note WHERE {scope.sql()})",
                *scope.args,
            )
        )

    async def has_notes(self, conn: Connection, scope: Where) -> bool:
        """Whether a live note matches ``scope`` (no leading values)."""
        return bool(
            await conn.fetchval(
                f"SELECT EXISTS (SELECT 1 FROM note WHERE {scope.sql()})",  # noqa: S608
                *scope.args,
            )
        )

    async def vaults(self, conn: Connection, scope: Where) -> list[str]:
        """The vaults (external source ``vault:<name>``) the notes of ``scope`` came from."""
        rows = await conn.fetch(
            "SELECT DISTINCT substr(external_source, 7) AS vault FROM note "  # noqa: S608
            f"WHERE external_source LIKE 'vault:%' AND {scope.sql()} ORDER BY 1",
            *scope.args,
        )
        return [row["vault"] for row in rows]

    async def note_ids(self, conn: Connection, scope: Where) -> list[UUID]:
        """The live notes matching ``scope`` (no leading values)."""
        rows = await conn.fetch(
            f"SELECT id FROM note WHERE {scope.sql()} ORDER BY id",  # noqa: S608
            *scope.args,
        )
        return [row["id"] for row in rows]


def _chunk(row: Any) -> ChunkLexical:
    return ChunkLexical(
        chunk_id=int(row["id"]),
        note_id=row["note_id"],
        ordinal=int(row["ordinal"]),
        heading=row["heading"],
        text=row["text"],
        title=row["title"],
        path=row["path"],
        project=row["project"],
        skill=row["skill"],
        tfidf=float(row["tfidf"]),
        metadata=float(row["meta"]),
        matched=float(row["matched"]),
    )
