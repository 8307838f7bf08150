"""The statements of the lexical segment: the whole index as of one snapshot (to build a
segment), and per query the query's terms with what changed since a segment's snapshot.
Each runs in the caller's memory transaction, REPEATABLE READ, so a build reads one
snapshot and a query's delta is read in the query's own snapshot.

The delta is complete only because the lexical index changes row by row through the
note triggers (migration 0014 stamps each ``lex_doc`` row and tombstones each removal):
a migration that rewrote ``lex_doc`` by TRUNCATE, which leaves no tombstones, must
recreate the table instead, whose new oid every segment checks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

import numpy as np

from fortemi.platform.database import Connection
from fortemi.retrieval.segment import Delta, Segment, Snapshot, TermPostings

__all__ = ["Changes", "SegmentRepository"]

_SNAPSHOT = (
    "SELECT pg_current_snapshot()::text AS snapshot, 'lex_doc'::regclass::oid::int8 AS relation"
)
_DOCS = "SELECT note_id, dl FROM lex_doc ORDER BY note_id"
# The planner's row estimate (kept by ANALYZE and autovacuum): a memory far over the budget
# is not read into RAM only to be dropped.
_ESTIMATE = "SELECT greatest(reltuples, 0)::int8 FROM pg_class WHERE oid = 'lex_posting'::regclass"
# Each term's postings as two big-endian int4 arrays in one bytea each: note numbers
# (the note's place in id order) ascending, and term frequencies. numpy reads them as
# they come; decoding millions of rows one by one would take seconds.
_POSTINGS = """
    WITH numbered AS (
        SELECT note_id, (row_number() OVER (ORDER BY note_id) - 1)::int4 AS n FROM lex_doc
    )
    SELECT lp.lexeme,
           string_agg(int4send(numbered.n), ''::bytea ORDER BY numbered.n) AS notes,
           string_agg(int4send(lp.tf), ''::bytea ORDER BY numbered.n) AS tfs
    FROM lex_posting lp JOIN numbered ON numbered.note_id = lp.note_id
    GROUP BY lp.lexeme
"""
# $1 the query text, $2 the segment's xmin, $3 the most changed notes worth reading. The
# terms are the exhaustive statement's (fortemi.retrieval.repository.TERMS_CTE) for a
# query without prefixes: a lexeme's query frequency is its number of positions.
_CHANGES = """
    WITH terms AS (
        SELECT t.lexeme COLLATE "C" AS lexeme,
               coalesce(array_length(t.positions, 1), 1)::float8 AS qtf
        FROM unnest(to_tsvector('english', $1)) AS t
    ),
    changed AS MATERIALIZED (
        SELECT note_id FROM lex_doc WHERE xid >= $2::text::xid8
        UNION
        SELECT note_id FROM lex_gone WHERE xid >= $2::text::xid8
        LIMIT $3
    )
    SELECT pg_current_snapshot()::text AS snapshot,
           'lex_doc'::regclass::oid::int8 AS relation,
           ARRAY(SELECT lexeme FROM terms ORDER BY lexeme) AS lexemes,
           ARRAY(SELECT qtf FROM terms ORDER BY lexeme) AS qtfs,
           ARRAY(SELECT note_id FROM changed) AS changed
"""
_FORGET = "DELETE FROM lex_gone WHERE at < clock_timestamp() - $1::interval"
_CHANGED_DOCS = "SELECT note_id, dl FROM lex_doc WHERE note_id = ANY($1::uuid[])"
_CHANGED_POSTINGS = """
    SELECT lexeme, note_id, tf FROM lex_posting
    WHERE lexeme = ANY($1::text[]) AND note_id = ANY($2::uuid[])
"""


@dataclass(frozen=True, slots=True)
class Changes:
    """A query's view against a segment: its snapshot, ``lex_doc``'s oid, its terms
    (lexeme, query frequency), the delta, and whether more notes changed than were read
    (then the delta is incomplete and the segment must not be used)."""

    snapshot: Snapshot
    relation: int
    terms: list[tuple[str, float]]
    delta: Delta
    overflow: bool


class SegmentRepository:
    async def estimated_postings(self, conn: Connection) -> int:
        """About how many postings the memory has (0 before its first ANALYZE)."""
        return int(await conn.fetchval(_ESTIMATE) or 0)

    async def build(self, conn: Connection) -> Segment:
        """The memory's whole lexical index as the transaction's snapshot holds it."""
        head = await conn.fetchrow(_SNAPSHOT)
        if head is None:
            raise RuntimeError("a SELECT without FROM returned no row")
        docs = await conn.fetch(_DOCS)
        terms = {
            row["lexeme"]: TermPostings(
                np.frombuffer(row["notes"], dtype=">i4").astype(np.int32),
                np.frombuffer(row["tfs"], dtype=">i4").astype(np.int32),
            )
            for row in await conn.fetch(_POSTINGS)
        }
        return Segment.of(
            Snapshot.parse(head["snapshot"]),
            int(head["relation"]),
            [row["note_id"] for row in docs],
            [row["dl"] for row in docs],
            terms,
        )

    async def forget_tombstones(self, conn: Connection, older_than: timedelta) -> None:
        """Drop the tombstones older than ``older_than``: no readable segment needs them."""
        await conn.execute(_FORGET, older_than)

    async def changes(self, conn: Connection, text: str, since: Snapshot, most: int) -> Changes:
        """The query's terms and the notes changed since ``since`` (at most ``most``)."""
        row = await conn.fetchrow(_CHANGES, text, str(since.xmin), most + 1)
        if row is None:
            raise RuntimeError("a SELECT without FROM returned no row")
        terms = list(zip(row["lexemes"], row["qtfs"], strict=True))
        changed: list[UUID] = list(row["changed"])
        snapshot = Snapshot.parse(row["snapshot"])
        if len(changed) > most:
            return Changes(snapshot, int(row["relation"]), terms, Delta(), overflow=True)
        if not changed:
            return Changes(snapshot, int(row["relation"]), terms, Delta(), overflow=False)
        lengths = {r["note_id"]: int(r["dl"]) for r in await conn.fetch(_CHANGED_DOCS, changed)}
        postings: dict[str, list[tuple[UUID, int]]] = {}
        if lengths and terms:
            found = await conn.fetch(_CHANGED_POSTINGS, [t for t, _ in terms], list(lengths))
            for r in found:
                postings.setdefault(r["lexeme"], []).append((r["note_id"], int(r["tf"])))
        delta = Delta(frozenset(changed), lengths, postings)
        return Changes(snapshot, int(row["relation"]), terms, delta, overflow=False)
