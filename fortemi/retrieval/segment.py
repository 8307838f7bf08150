"""A memory's lexical index held in RAM as of one database snapshot, and exact BM25 top-k
from it plus what changed since.

A :class:`Segment` is every posting of ``lex_posting`` and every length of ``lex_doc`` as
one snapshot saw them, with notes numbered in note-id order (so ordering by number is
ordering by id, the exhaustive leg's tie-break). A query reads, in its own snapshot, the
notes written or removed by transactions the segment's snapshot did not see (a
:class:`Delta`): their segment postings are ignored and their current ones added. The
corpus size, the average length and every document frequency then count exactly what the
query's snapshot holds, so the ranking is the exhaustive statement's: same terms, same
weights, the same float expression per posting, sums rounded to 1e-9, ties by note id.

This is the design of a search engine's near-real-time reader (an immutable segment plus
live changes), kept here because PostgreSQL has no such index: scoring every posting of
the query's terms from arrays costs microseconds where a statement costs milliseconds,
and nothing precomputed depends on the corpus statistics, so nothing can go stale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.platform.snapshots import Snapshot

__all__ = ["Delta", "Ranking", "Segment", "Snapshot", "TermPostings", "rank"]

Ints = npt.NDArray[np.int32]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TermPostings:
    """A term's postings: note numbers ascending and their term frequencies."""

    notes: Ints
    tfs: Ints


@dataclass(frozen=True, slots=True)
class Segment:
    """A memory's postings as of ``snapshot``. ``relation`` is ``lex_doc``'s table oid: a
    memory deleted and made again under the same name has another, so a segment of the
    old one is never read for the new one."""

    snapshot: Snapshot
    relation: int
    ids: Sequence[UUID]  # note number → id, ascending
    lengths: Floats  # note number → document length
    terms: Mapping[str, TermPostings]
    length_sum: int
    postings: int
    numbers: Mapping[UUID, int] = field(default_factory=dict)  # id → note number

    @classmethod
    def of(
        cls,
        snapshot: Snapshot,
        relation: int,
        ids: Sequence[UUID],
        lengths: Sequence[int],
        terms: Mapping[str, TermPostings],
    ) -> Segment:
        dl = np.asarray(lengths, dtype=np.float64)
        return cls(
            snapshot=snapshot,
            relation=relation,
            ids=ids,
            lengths=dl,
            terms=terms,
            length_sum=int(np.asarray(lengths, dtype=np.int64).sum()),
            postings=sum(len(p.notes) for p in terms.values()),
            numbers={note_id: i for i, note_id in enumerate(ids)},
        )

    @property
    def size(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True)
class Delta:
    """What the query's snapshot holds that the segment may not: the notes written or
    removed since the segment's snapshot (``changed``), the lengths of those still live
    (``lengths``), and their postings of the query's terms (``postings``: per lexeme, the
    notes and term frequencies)."""

    changed: frozenset[UUID] = frozenset()
    lengths: Mapping[UUID, int] = field(default_factory=dict)
    postings: Mapping[str, Sequence[tuple[UUID, int]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Ranking:
    """The best notes (at most k, best first), the corpus statistics they were scored
    with, and how many postings were scored."""

    found: list[tuple[UUID, float]]
    docs: int
    avgdl: float
    postings: int  # postings scored (the segment's of the query's terms, and the delta's)
    total: int  # postings the query's terms have in the query's snapshot
    weights: list[tuple[str, float]]


def rank(
    segment: Segment,
    delta: Delta,
    terms: Sequence[tuple[str, float]],
    k: int,
    *,
    k1: float,
    b: float,
) -> Ranking:
    """The exact BM25 top ``k`` for ``terms`` (lexeme, query frequency) over the segment
    updated by ``delta``."""
    known = [segment.numbers[n] for n in delta.changed if n in segment.numbers]
    stale = None
    if known:  # a mask over every note only when some changed (not the usual case)
        stale = np.zeros(segment.size, dtype=bool)
        stale[known] = True
    docs = segment.size - len(known) + len(delta.lengths)
    length_sum = segment.length_sum - int(segment.lengths[known].sum())
    length_sum += sum(delta.lengths.values())
    if docs == 0:
        return Ranking([], 0, 0.0, 0, 0, [])
    avgdl = length_sum / docs
    notes: list[Ints] = []
    parts: list[Floats] = []
    extra: dict[UUID, float] = {}
    weights: list[tuple[str, float]] = []
    read = total = 0
    for lexeme, qtf in terms:
        held = segment.terms.get(lexeme)
        # Nothing changed since the build (the usual case): every posting held counts.
        kept = None if held is None or stale is None else ~stale[held.notes]
        fresh = delta.postings.get(lexeme, ())
        mine = 0 if held is None else len(held.notes) if kept is None else int(kept.sum())
        df = mine + len(fresh)
        if df == 0:
            continue
        total += df
        # The exhaustive statement's expressions, in its order of operations.
        weight = qtf * math.log(1 + (float(docs) - df + 0.5) / (df + 0.5))
        weights.append((lexeme, weight))
        if held is not None and mine:
            at, tf = (held.notes, held.tfs) if kept is None else (held.notes[kept], held.tfs[kept])
            tf = tf.astype(np.float64)
            dl = segment.lengths[at]
            notes.append(at)
            parts.append(weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))
            read += len(held.notes)
        for note_id, tf_ in fresh:
            dl_ = delta.lengths[note_id]
            c = weight * tf_ * (k1 + 1) / (tf_ + k1 * (1 - b + b * dl_ / avgdl))
            extra[note_id] = extra.get(note_id, 0.0) + c
        read += len(fresh)
    found = _best(segment, notes, parts, k)  # in order: by score, then number (= id)
    if extra:
        found += [(n, _round(s)) for n, s in extra.items()]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
    return Ranking(found[:k], docs, avgdl, read, total, weights)


def _best(
    segment: Segment, notes: list[Ints], parts: list[Floats], k: int
) -> list[tuple[UUID, float]]:
    """The segment's best ``k`` notes by summed contributions, rounded as the exhaustive
    statement rounds them; notes tied with the k-th all come, so ties are decided by id."""
    if not notes:
        return []
    scored = np.bincount(
        np.concatenate(notes), weights=np.concatenate(parts), minlength=segment.size
    )
    hit = np.flatnonzero(scored > 0)
    rounded = np.rint(scored[hit] * 1e9) / 1e9
    if len(hit) > k:
        kth = np.partition(rounded, len(rounded) - k)[len(rounded) - k]
        keep = rounded >= kth
        hit, rounded = hit[keep], rounded[keep]
    order = np.lexsort((hit, -rounded))[:k]
    ids = segment.ids
    return [(ids[n], s) for n, s in zip(hit[order].tolist(), rounded[order].tolist(), strict=True)]


def _round(score: float) -> float:
    return float(np.rint(score * 1e9) / 1e9)
