"""From the legs' candidates to the hits a search returns: one leg's scores, or both fused
(:mod:`fortemi.retrieval.fusion`), best first, ties broken by memory and note.

Across memories, raw scores are comparable within a leg (BM25 scores are absolute for a
query, cosine similarity is too), so each leg's candidates are merged by score before
fusion, exactly as if the memories were one corpus ranked with per-memory statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from fortemi.retrieval.fusion import FusionPlan, Ranked, plan, rrf, rsf
from fortemi.retrieval.models import FusionMode, Hit, SearchMode, SearchRequest
from fortemi.retrieval.query import ParsedQuery

__all__ = ["Candidates", "fuse"]

Key = tuple[str, UUID]


@dataclass
class Candidates:
    """One leg's candidates across memories: (memory, note) → (score, best chunk's id:
    the semantic leg's; None for the lexical leg's)."""

    found: dict[Key, tuple[float, int | None]] = field(default_factory=dict)

    def ranked(self) -> Ranked[Key]:
        order = sorted(
            self.found.items(), key=lambda item: (-item[1][0], item[0][0], str(item[0][1]))
        )
        return Ranked(keys=[key for key, _ in order], scores=[value[0] for _, value in order])


def fuse(
    request: SearchRequest,
    query: ParsedQuery,
    lexical: Candidates,
    semantic: Candidates,
    limit: int,
) -> tuple[list[Hit], FusionPlan | None]:
    """The best ``limit`` hits (without their notes) and the fusion plan (None unless
    hybrid)."""
    lexical_ranked, semantic_ranked = lexical.ranked(), semantic.ranked()
    fusion: FusionPlan | None = None
    if request.mode is SearchMode.LEXICAL:
        scores = dict(zip(lexical_ranked.keys, lexical_ranked.scores, strict=True))
    elif request.mode is SearchMode.SEMANTIC:
        scores = dict(zip(semantic_ranked.keys, semantic_ranked.scores, strict=True))
    else:
        fusion = plan(
            query.type,
            rsf=request.fusion is FusionMode.RSF,
            alpha=request.alpha,
            k=request.k,
            adaptive=request.adaptive,
        )
        combine = rsf if request.fusion is FusionMode.RSF else rrf
        scores = combine(lexical_ranked, semantic_ranked, fusion)
    lexical_rank = {key: rank for rank, key in enumerate(lexical_ranked.keys, start=1)}
    semantic_rank = {key: rank for rank, key in enumerate(semantic_ranked.keys, start=1)}
    order = sorted(scores.items(), key=lambda item: (-item[1], item[0][0], str(item[0][1])))
    hits = []
    for key, score in order[:limit]:
        lex, sem = lexical.found.get(key), semantic.found.get(key)
        hits.append(
            Hit(
                memory=key[0],
                note_id=key[1],
                score=score,
                chunk=None,
                lexical_rank=lexical_rank.get(key),
                lexical_score=lex[0] if lex else None,
                semantic_rank=semantic_rank.get(key),
                semantic_score=sem[0] if sem else None,
                chunk_id=sem[1] if sem else None,
            )
        )
    return hits, fusion
