"""The statements the pruned lexical leg reads ``lex_posting`` with: the query's terms and
their document frequencies, then the top k above a threshold from postings read in impact
order (``lex_posting_impact_idx``) and completed by primary key. Each runs in the caller's
memory transaction, which is REPEATABLE READ for a search, so the pruned leg's statements
read one snapshot, as the exhaustive leg's single statement does."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from fortemi.platform.database import Connection
from fortemi.retrieval.pruning import SLACK, Cutoff, Shape, Term
from fortemi.retrieval.repository import TERMS_CTE, Bm25

__all__ = ["Above", "PostingsRepository", "TermStat"]


@dataclass(frozen=True, slots=True)
class TermStat:
    """A query term: its lexeme, how often the query says it, and how many notes have it."""

    lexeme: str
    qtf: float
    df: int


@dataclass(frozen=True, slots=True)
class Above:
    """The best notes of those scoring at least the threshold (at most k, best first), how
    many notes scored that much, and how many postings were read."""

    found: list[tuple[UUID, float]]
    reaching: int
    postings: int


# TERMS_CTE binds the text as $1 and the prefixes as $6 (the exhaustive statement's
# numbering); here they are the only two parameters.
_TERM_STATS = f"""
    WITH {TERMS_CTE.replace("$6::text[]", "$2::text[]")}
    SELECT terms.lexeme, terms.qtf,
           (SELECT count(*) FROM lex_posting WHERE lexeme = terms.lexeme) AS df
    FROM terms ORDER BY terms.lexeme
"""  # noqa: S608 - fixed fragments; every value is a parameter

# $1 lexemes, $2 weights, $3 keys to read down to, $4 bounds past them, $5 the sum of those
# bounds, $6 the threshold less the slack, $7 average length, $8 k1, $9 b, $10 k, $11 the
# threshold. The key is the impact index's expression, written identically so the planner
# uses the index; a posting's BM25 term is computed as in the exhaustive statement.
_CONTRIBUTION = (
    "r.weight * lp.tf * ($8::float8 + 1)"
    " / (lp.tf + $8::float8 * (1 - $9::float8 + $9::float8 * lp.dl / $7::float8))"
)
_ABOVE = f"""
    WITH r AS (
        SELECT * FROM unnest($1::text[], $2::float8[], $3::float8[], $4::float8[])
                      WITH ORDINALITY AS r(lexeme, weight, until, bound, i)
    ),
    read AS MATERIALIZED (
        SELECT lp.note_id, r.i, r.bound, {_CONTRIBUTION} AS c
        FROM r CROSS JOIN LATERAL (
            SELECT lp.note_id, lp.tf, lp.dl FROM lex_posting lp
            WHERE lp.lexeme = r.lexeme COLLATE "C" AND ((lp.dl + 20)::float8 / lp.tf) <= r.until
        ) AS lp
    ),
    candidates AS (
        SELECT note_id, sum(c) AS partial, array_agg(i) AS seen FROM read
        GROUP BY note_id
        HAVING sum(c) + $5::float8 - sum(bound) >= $6::float8
    ),
    scored AS (
        SELECT candidates.note_id,
               round((candidates.partial + coalesce(rest.c, 0)) * 1e9::float8) / 1e9::float8
               AS score
        FROM candidates LEFT JOIN LATERAL (
            SELECT sum({_CONTRIBUTION}) AS c
            FROM r JOIN lex_posting lp
                 ON lp.lexeme = r.lexeme COLLATE "C" AND lp.note_id = candidates.note_id
            WHERE r.bound > 0 AND r.i <> ALL (candidates.seen)
        ) AS rest ON true
    )
    SELECT note_id, score,
           count(*) FILTER (WHERE score >= $11::float8) OVER () AS reaching,
           (SELECT count(*) FROM read) AS postings
    FROM scored
    ORDER BY score DESC, note_id
    LIMIT $10::int
"""  # noqa: S608 - fixed fragments; every value is a parameter


class PostingsRepository:
    async def term_stats(self, conn: Connection, bm25: Bm25) -> list[TermStat]:
        """The query's terms (its lexemes and prefix expansions), by lexeme."""
        rows = await conn.fetch(_TERM_STATS, bm25.text, list(bm25.prefixes))
        return [TermStat(row["lexeme"], float(row["qtf"]), int(row["df"])) for row in rows]

    async def above(
        self,
        conn: Connection,
        terms: Sequence[Term],
        cuts: Sequence[Cutoff],
        theta: float,
        shape: Shape,
        k: int,
    ) -> Above:
        """The best ``k`` notes among those scoring ``theta`` or more, reading each term's
        postings down to its cutoff and the other terms of promising notes by key."""
        rows = await conn.fetch(
            _ABOVE,
            [t.lexeme for t in terms],
            [t.weight for t in terms],
            [c.until for c in cuts],
            [c.bound for c in cuts],
            math.fsum(c.bound for c in cuts),
            theta - SLACK,
            shape.avgdl,
            shape.k1,
            shape.b,
            k,
            theta,
        )
        found = [(row["note_id"], float(row["score"])) for row in rows]
        reaching = int(rows[0]["reaching"]) if rows else 0
        postings = int(rows[0]["postings"]) if rows else 0
        return Above(found, reaching, postings)
