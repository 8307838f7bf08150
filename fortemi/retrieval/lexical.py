"""The lexical leg: notes ranked by Okapi BM25 over the inverted index the note triggers
maintain (``lex_posting``: term frequency and note length per (lexeme, note)).

Document frequencies are counted from the same index rows in the same scan; the corpus
size and average length come from ``lex_doc``, cached for a few seconds per memory. A
word the query repeats counts once per occurrence.
"""

from __future__ import annotations

import time
from uuid import UUID

from fortemi.platform.database import Connection
from fortemi.platform.notes.models import NoteFilter
from fortemi.retrieval.conditions import note_conditions
from fortemi.retrieval.query import ParsedQuery
from fortemi.retrieval.repository import Bm25, RetrievalRepository

__all__ = ["BM25_B", "BM25_K1", "STATS_TTL_SECONDS", "LexicalLeg"]

BM25_K1 = 1.2
BM25_B = 0.75
STATS_TTL_SECONDS = 5.0
_CANDIDATES = 4  # notes ranked per note wanted before a filter is checked


class LexicalLeg:
    def __init__(self, repository: RetrievalRepository) -> None:
        self._repository = repository
        self._stats: dict[str, tuple[float, int, float]] = {}  # memory → (at, docs, avgdl)

    async def rank(
        self,
        conn: Connection,
        memory: str,
        query: ParsedQuery,
        note_filter: NoteFilter,
        fetch: int,
    ) -> list[tuple[UUID, float]]:
        """The best ``fetch`` notes by BM25 that pass ``note_filter``, best first.

        Postings exist for live notes only, so with nothing else to check no note is read.
        Otherwise the best ``_CANDIDATES * fetch`` notes are ranked from the postings alone
        and only they are checked against the filter, by primary key: the note table is
        never scanned. If the filter rejects so many of them that fewer than ``fetch``
        remain while more notes match, the filter goes into the ranking instead (every
        matching note checked), so a selective filter still gets a full page.
        """
        docs, avgdl = await self._corpus(conn, memory)
        if docs == 0:
            return []
        bm25 = Bm25(query.lexical_text, tuple(query.prefixes), docs, avgdl, BM25_K1, BM25_B)
        if note_filter == NoteFilter() and not (query.phrases or query.excluded):
            found, _ = await self._repository.bm25(conn, bm25, None, fetch)
            return found
        where = note_conditions(note_filter, query, *bm25.args())
        first = fetch * _CANDIDATES
        found, ranked = await self._repository.bm25(conn, bm25, where, fetch, first)
        if len(found) < fetch and (not found or ranked == first):
            found, _ = await self._repository.bm25(conn, bm25, where, fetch)
        return found

    async def _corpus(self, conn: Connection, memory: str) -> tuple[int, float]:
        now = time.monotonic()
        cached = self._stats.get(memory)
        if cached is not None and now - cached[0] < STATS_TTL_SECONDS:
            return cached[1], cached[2]
        docs, avgdl = await self._repository.corpus(conn)
        if docs:  # an empty memory is asked again: its first note must be found at once
            self._stats[memory] = (now, docs, avgdl)
        return docs, avgdl
