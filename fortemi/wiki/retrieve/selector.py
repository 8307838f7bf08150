"""From the routed notes' chunks to the few a prompt carries.

1. **Fusion**: chunks ranked by their lexical score (TF-IDF of the chunk's text plus
   ``metadata_boost`` times the metadata match) and by their cosine to the question, and
   the two ranks fused with weighted reciprocal rank fusion:
   ``fused = w_tfidf / (k + rank_tfidf) + w_semantic / (k + rank_semantic)`` (a leg that
   does not rank a chunk adds nothing). RRF is computed here rather than through search's
   fusion module, which is retrieval's own, not its service.
2. **Relevance**: one threshold on one scale. With vectors, relevance is the cosine; a
   chunk passes at ``min_relevance`` and within ``relative_relevance`` of the best chunk's
   cosine. Without a vector, relevance is the share of the question's IDF weight the
   chunk holds, against ``min_lexical_relevance``. Fused rank orders; relevance admits.
3. **Top** ``top_chunks`` by fused score, then **near-duplicates** removed: a chunk whose
   set of ``shingle_words``-word shingles has Jaccard similarity of at least
   ``duplicate_jaccard`` with an already kept chunk's is dropped (the better-ranked one
   stays).
4. The **token budget** is applied by the layout, in fused order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fortemi.retrieval.service import ScopedChunk
from fortemi.wiki.retrieve.models import Candidate, PlanSettings

__all__ = ["candidates", "select", "shingles"]

_WORD = re.compile(r"\w+", re.UNICODE)


def candidates(chunks: Sequence[ScopedChunk], question_weight: float) -> list[Candidate]:
    """Each chunk as a candidate; ``question_weight`` is the sum of the question's
    lexemes' weights (for the lexical share)."""
    found = []
    for chunk in chunks:
        c = chunk.lexical
        found.append(
            Candidate(
                chunk_id=c.chunk_id,
                note_id=c.note_id,
                title=c.title,
                path=c.path,
                project=c.project,
                skill=c.skill,
                ordinal=c.ordinal,
                heading=c.heading,
                text=c.text,
                tfidf=c.tfidf,
                metadata=c.metadata,
                semantic=chunk.semantic,
                lexical_share=c.matched / question_weight if question_weight > 0 else 0.0,
            )
        )
    return found


def fuse(found: list[Candidate], settings: PlanSettings) -> list[Candidate]:
    """``found`` with fused scores and relevance, best fused first."""
    boost = settings.metadata_boost
    lexical = sorted(
        (c for c in found if c.tfidf + boost * c.metadata > 0),
        key=lambda c: (-(c.tfidf + boost * c.metadata), c.chunk_id),
    )
    semantic = sorted(
        (c for c in found if c.semantic is not None),
        key=lambda c: (-(c.semantic or 0.0), c.chunk_id),
    )
    k = settings.rrf_k
    for rank, c in enumerate(lexical, start=1):
        c.fused += settings.tfidf_weight / (k + rank)
    for rank, c in enumerate(semantic, start=1):
        c.fused += settings.semantic_weight / (k + rank)
    for c in found:
        c.relevance = c.semantic if c.semantic is not None else c.lexical_share
    return sorted(found, key=lambda c: (-c.fused, c.chunk_id))


def select(found: list[Candidate], settings: PlanSettings) -> list[Candidate]:
    """The chunks that pass the threshold, the top and near-duplicate removal, best
    fused first; every other candidate gets the reason it was left out."""
    ranked = fuse(found, settings)
    best = max((c.semantic for c in ranked if c.semantic is not None), default=None)
    kept: list[Candidate] = []
    kept_shingles: list[frozenset[str]] = []
    for c in ranked:
        if c.semantic is not None:
            floor = settings.min_relevance
            if best is not None:
                floor = max(floor, best - settings.relative_relevance)
            if c.semantic < floor:
                c.dropped = "below_relevance_threshold"
                continue
        elif c.lexical_share < settings.min_lexical_relevance:
            c.dropped = "below_relevance_threshold"
            continue
        if len(kept) == settings.top_chunks:
            c.dropped = "beyond_top"
            continue
        mine = shingles(c.text, settings.shingle_words)
        if any(_jaccard(mine, other) >= settings.duplicate_jaccard for other in kept_shingles):
            c.dropped = "near_duplicate"
            continue
        kept.append(c)
        kept_shingles.append(mine)
    return kept


def shingles(text: str, size: int) -> frozenset[str]:
    """The text's runs of ``size`` consecutive words, lower-cased (the whole text when
    shorter)."""
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) <= size:
        return frozenset({" ".join(words)}) if words else frozenset()
    return frozenset(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
