"""The lexical leg: notes ranked by Okapi BM25 over the inverted index the note triggers
maintain (``lex_posting``: term frequency and note length per (lexeme, note)).

Three paths compute the same ranking. The *segment* path (the default once the memory's
segment is built, :mod:`~fortemi.retrieval.segments`) scores the query's postings from
RAM and reads from the database only the query's terms and what changed since the
segment's snapshot. Until then, and for queries with prefixes or when too much changed,
the *pruned* path reads each term's postings best first and stops once no unread posting
can change the top k (:mod:`~fortemi.retrieval.pruning`); it costs a few round trips, so a
query whose terms have at most ``EXHAUSTIVE_POSTINGS`` postings in all takes the
*exhaustive* one, which scores every posting of every term in one statement, as does any
query when pruning is off (``FORTEMI_LEXICAL_PRUNING``, or ``lexicalPruning: false``).

Every path counts the corpus size, average length and document frequencies exactly in
the query's snapshot: the segment path from its arrays and delta, the statements from
``lex_doc`` and the index rows. A word the query repeats counts once per occurrence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from uuid import UUID

from fortemi.platform.database import Connection
from fortemi.platform.notes.models import NoteFilter
from fortemi.retrieval.conditions import note_conditions
from fortemi.retrieval.postings_repository import PostingsRepository
from fortemi.retrieval.pruning import SLACK, Cutoff, Shape, Term, cutoffs, upper_bound
from fortemi.retrieval.query import ParsedQuery
from fortemi.retrieval.repository import Bm25, RetrievalRepository
from fortemi.retrieval.segment import rank as segment_rank
from fortemi.retrieval.segments import MOST_CHANGES, REBUILD_CHANGES, Segments

__all__ = [
    "BM25_B",
    "BM25_K1",
    "EXHAUSTIVE_POSTINGS",
    "STATS_TTL_SECONDS",
    "LexicalLeg",
    "LexicalPath",
    "LexicalTrace",
]

BM25_K1 = 1.2
BM25_B = 0.75
STATS_TTL_SECONDS = 5.0
EXHAUSTIVE_POSTINGS = 6000  # below this many postings in all, one statement scores them all
_CANDIDATES = 4  # notes ranked per note wanted before a filter is checked

RARE_SHARE = 0.1  # a term with at most this share of the query's postings is read whole
SEED_SHARE = 0.25  # the threshold's statement may touch this share of the postings at most
# Past this k the threshold (the k-th best score) is low and the pruned path was measured
# slower at the tail than the exhaustive one (k 300, a page of 100: p95 276 vs 76 ms).
PRUNED_MAX_K = 100


class LexicalPath(StrEnum):
    SEGMENT = "segment"
    PRUNED = "pruned"
    EXHAUSTIVE = "exhaustive"


@dataclass(frozen=True, slots=True)
class _Counted:
    """The query's terms with their BM25 weights, their document frequencies counted."""

    weights: list[tuple[str, float]]


@dataclass(slots=True)
class LexicalTrace:
    """What a ranking read: the path taken and the postings scored, beside how many
    postings the query's terms have (what the exhaustive path scores)."""

    path: LexicalPath = LexicalPath.EXHAUSTIVE
    postings_read: int = 0
    postings_total: int = 0


class LexicalLeg:
    def __init__(
        self,
        repository: RetrievalRepository,
        *,
        pruning: bool = True,
        exhaustive_postings: int = EXHAUSTIVE_POSTINGS,
        rare_share: float = RARE_SHARE,
        seed_share: float = SEED_SHARE,
        segments: Segments | None = None,
    ) -> None:
        """``pruning``: the default path. A query whose terms have at most
        ``exhaustive_postings`` postings is scored exhaustively; a term with at most
        ``rare_share`` of the query's postings is rare (read whole by the pruned path); the
        pruned path runs when reading the rare terms and looking up their notes' other
        terms touches at most ``seed_share`` of the postings. ``segments``: the segments
        the segment path reads (None: no segment path)."""
        self._repository = repository
        self._postings = PostingsRepository()
        self._pruning = pruning
        self._exhaustive_postings = exhaustive_postings
        self._rare_share = rare_share
        self._seed_share = seed_share
        self._segments = segments

    async def rank(
        self,
        conn: Connection,
        memory: str,
        query: ParsedQuery,
        note_filter: NoteFilter,
        fetch: int,
        *,
        pruning: bool | None = None,
        trace: LexicalTrace | None = None,
    ) -> list[tuple[UUID, float]]:
        """The best ``fetch`` notes by BM25 that pass ``note_filter``, best first.

        Postings exist for live notes only, so with nothing else to check no note is read.
        Otherwise the best ``_CANDIDATES * fetch`` notes are ranked from the postings alone
        and only they are checked against the filter, by primary key: the note table is
        never scanned. If the filter rejects so many of them that fewer than ``fetch``
        remain while more notes match, the filter goes into the ranking instead (every
        matching note checked, exhaustively), so a selective filter still gets a full page.
        ``pruning`` overrides the leg's setting for this call; ``trace`` receives what was
        read.
        """
        trace = trace if trace is not None else LexicalTrace()
        prune = self._pruning if pruning is None else pruning
        unfiltered = note_filter == NoteFilter() and not (query.phrases or query.excluded)
        first = fetch if unfiltered else fetch * _CANDIDATES
        held = await self._from_segment(conn, memory, query, first, trace) if prune else None
        ranked: list[tuple[UUID, float]] | _Counted | None
        weights: list[tuple[str, float]] | None = None  # counted by the segment path
        if held is not None:
            bm25, ranked, weights = held
            if bm25.docs == 0:
                return []
        else:
            # Counted in the query's snapshot: statistics cached across queries would
            # score a note written since against a corpus that does not hold it.
            docs, avgdl = await self._repository.corpus(conn)
            if docs == 0:
                return []
            bm25 = Bm25(query.lexical_text, tuple(query.prefixes), docs, avgdl, BM25_K1, BM25_B)
            ranked = await self._ranked(conn, bm25, first, prune, trace)
        if not isinstance(ranked, list):  # the exhaustive path, with the weights if counted
            trace.path = LexicalPath.EXHAUSTIVE
            trace.postings_read += trace.postings_total
            given = None if ranked is None else ranked.weights
            return await self._exhaustive(conn, bm25, query, note_filter, fetch, given)
        if unfiltered:
            return ranked
        # The best page is checked first (usually it passes whole), then the rest at once.
        found: list[tuple[UUID, float]] = []
        for page in (ranked[:fetch], ranked[fetch:]):
            if not page:
                break
            ids = [note_id for note_id, _ in page]
            passing = await self._repository.passing(conn, note_conditions(note_filter, query, ids))
            found += [(note_id, score) for note_id, score in page if note_id in passing]
            if len(found) >= fetch:
                return found[:fetch]
        if len(ranked) == first:
            trace.path = LexicalPath.EXHAUSTIVE
            found = await self._exhaustive(conn, bm25, query, note_filter, fetch, weights)
        return found

    async def _from_segment(
        self, conn: Connection, memory: str, query: ParsedQuery, k: int, trace: LexicalTrace
    ) -> tuple[Bm25, list[tuple[UUID, float]], list[tuple[str, float]]] | None:
        """The best ``k`` notes from the memory's segment and the delta since it, with the
        statistics and term weights they were scored with; None when the segment cannot
        answer (none yet, a prefix to expand, too much changed, or taken after this
        query's snapshot)."""
        segments = self._segments
        if segments is None or query.prefixes:
            return None
        segment = segments.current(memory)
        if segment is None:
            return None
        changes = await segments.repository.changes(
            conn, query.lexical_text, segment.snapshot, MOST_CHANGES
        )
        if changes.relation != segment.relation:
            segments.drop(memory)  # the memory was made anew under its name
            segments.refresh(memory)
            return None
        if changes.overflow or len(changes.delta.changed) > REBUILD_CHANGES:
            segments.refresh(memory)
        if changes.overflow or not segment.snapshot.precedes(changes.snapshot):
            return None
        ranking = segment_rank(segment, changes.delta, changes.terms, k, k1=BM25_K1, b=BM25_B)
        trace.path = LexicalPath.SEGMENT
        trace.postings_read += ranking.postings
        trace.postings_total += ranking.total
        bm25 = Bm25(query.lexical_text, (), ranking.docs, ranking.avgdl, BM25_K1, BM25_B)
        return bm25, ranking.found, ranking.weights

    async def _exhaustive(
        self,
        conn: Connection,
        bm25: Bm25,
        query: ParsedQuery,
        note_filter: NoteFilter,
        fetch: int,
        given: list[tuple[str, float]] | None,
    ) -> list[tuple[UUID, float]]:
        """Every posting scored; a filter checked on the best ``_CANDIDATES * fetch``
        first, on every matching note when too few of them pass."""
        if note_filter == NoteFilter() and not (query.phrases or query.excluded):
            found, _ = await self._repository.bm25(conn, bm25, None, fetch, given=given)
            return found
        where = note_conditions(note_filter, query, *bm25.args(given))
        first = fetch * _CANDIDATES
        found, count = await self._repository.bm25(conn, bm25, where, fetch, first, given)
        if len(found) < fetch and (not found or count == first):
            found, _ = await self._repository.bm25(conn, bm25, where, fetch, given=given)
        return found

    async def _ranked(
        self, conn: Connection, bm25: Bm25, k: int, prune: bool, trace: LexicalTrace
    ) -> list[tuple[UUID, float]] | _Counted | None:
        """The best ``k`` notes from the postings alone by the pruned path; else the
        terms' weights for the exhaustive path (None: not counted)."""
        if not prune or k > PRUNED_MAX_K:
            return None
        stats = [stat for stat in await self._postings.term_stats(conn, bm25) if stat.df]
        trace.postings_total = sum(stat.df for stat in stats)
        weighed = _Counted([(s.lexeme, _weight(s.qtf, s.df, bm25.docs)) for s in stats])
        if trace.postings_total <= self._exhaustive_postings:
            return weighed
        rare = frozenset(
            i for i, s in enumerate(stats) if s.df <= self._rare_share * trace.postings_total
        )
        if not rare or len(rare) == len(stats):
            return weighed  # no strong, rare term to set the threshold: nothing to skip
        # The first statement reads the rare terms' postings and looks up each of their
        # notes' other terms: it must cost well below scoring everything.
        seeded = sum(stats[i].df for i in rare) * (1 + len(stats) - len(rare))
        if seeded > self._seed_share * trace.postings_total:
            return weighed
        trace.path = LexicalPath.PRUNED
        terms = [Term(lexeme, weight) for lexeme, weight in weighed.weights]
        shape = Shape(bm25.avgdl, bm25.k1, bm25.b)
        # The threshold: the k-th best score of the notes with a rare term, scored whole
        # (k notes reach it, so the second statement does not come short).
        seed = [Cutoff(math.inf, 0.0) if i in rare else Cutoff(-math.inf, upper_bound(t, shape))
                for i, t in enumerate(terms)]  # fmt: skip
        first = await self._postings.above(conn, terms, seed, 0.0, shape, k)
        trace.postings_read += first.postings
        if len(first.found) < k:
            return weighed  # too few notes with a rare term to set a threshold
        theta = first.found[-1][1] - SLACK  # below the rounding of its score
        above = await self._postings.above(
            conn, terms, cutoffs(terms, theta, shape, rare), theta, shape, k
        )
        trace.postings_read += above.postings
        if above.reaching >= k:
            return above.found
        return weighed


def _weight(qtf: float, df: int, docs: int) -> float:
    """The term's query frequency times Lucene's IDF, as the exhaustive statement has it."""
    return qtf * math.log(1 + (float(docs) - df + 0.5) / (df + 0.5))
