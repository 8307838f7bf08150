"""Search over the request's memory, or several the caller may read: hybrid, lexical or
semantic, fused with RRF or RSF, filtered before ranking, explained per leg on request."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry
from strawberry.types.nodes import SelectedField, Selection

from fortemi.graphql.context import Info
from fortemi.graphql.notes.types import Note
from fortemi.graphql.vocabulary.filters import ConceptFilter, ConceptSets, concept_sets
from fortemi.platform.errors import BadUserInput
from fortemi.retrieval import search as model

__all__ = ["SearchQuery"]

MAX_MEMORIES = 10


@strawberry.enum(description="Which legs run: both fused, or one alone")
class SearchMode(Enum):
    HYBRID = "hybrid"
    LEXICAL = "lexical"
    SEMANTIC = "semantic"


@strawberry.enum(description="How the legs are fused")
class Fusion(Enum):
    RRF = "rrf"
    RSF = "rsf"


@strawberry.input(description="Conditions every hit meets, applied before ranking")
class SearchFilter:
    required_tags: list[str] | None = strawberry.field(default=None, description="All of")
    any_tags: list[str] | None = strawberry.field(default=None, description="At least one of")
    excluded_tags: list[str] | None = strawberry.field(default=None, description="None of")
    projects: list[str] | None = strawberry.field(
        default=None, description="In one of these projects ([] matches nothing)"
    )
    created_after: datetime | None = None
    created_before: datetime | None = None
    starred: bool | None = None
    archived: bool | None = None
    concepts: ConceptFilter | None = strawberry.field(
        default=None,
        description="Concept conditions (AND, OR, NOT) with narrower concepts; one memory only",
    )


@strawberry.type(description="Why a hit ranks where it does")
class HitExplain:
    lexical_rank: int | None
    lexical_score: float | None = strawberry.field(description="BM25")
    semantic_rank: int | None
    semantic_score: float | None = strawberry.field(description="Cosine similarity")
    fused_score: float


@strawberry.type
class SearchHit:
    note: Note
    memory: str
    score: float
    chunk: str | None = strawberry.field(description="The part of the note that matched best")
    explain: HitExplain | None


@strawberry.type(description="How the legs were fused for this query")
class SearchFusion:
    query_type: str = strawberry.field(description="quoted, keyword, natural or conceptual")
    k: int = strawberry.field(description="RRF's k")
    lexical_weight: float
    semantic_weight: float


@strawberry.type(description="What the lexical leg read for this query")
class LexicalExplain:
    path: str = strawberry.field(
        description="segment, pruned or exhaustive (comma-separated when memories differ)"
    )
    postings_read: int = strawberry.field(description="Postings scored or looked up")
    postings_total: int = strawberry.field(
        description="Postings of the query's terms: what the exhaustive path scores"
    )


@strawberry.type(description="How the semantic leg searched for this query")
class SemanticExplain:
    path: str = strawberry.field(
        description="Each search the leg made, in order, comma-separated: hnsw (the "
        "index), scan (a small set read exactly), exact (every chunk passing the filters)"
    )
    ef_search: int | None = strawberry.field(
        description="The HNSW candidate list (hnsw.ef_search); null when no index search ran"
    )


@strawberry.type
class SearchResults:
    hits: list[SearchHit]
    degraded: bool = strawberry.field(description="The semantic leg could not run")
    degraded_reason: str | None
    took_ms: float
    fusion: SearchFusion | None
    lexical: LexicalExplain | None = strawberry.field(
        description="What the lexical leg read (with explain)"
    )
    semantic: SemanticExplain | None = strawberry.field(
        description="How the semantic leg searched (with explain)"
    )


@strawberry.type
class SearchIndexStatus:
    notes: int
    chunks: int
    embedded_chunks: int
    pending_embedding_jobs: int
    model: str | None = strawberry.field(description="The embedding model searched with")


def _filter(given: SearchFilter | None, sets: ConceptSets) -> model.SearchFilter:
    if given is None:
        return model.SearchFilter()
    return model.SearchFilter(
        concepts_all=sets.all,
        concepts_any=sets.any,
        concepts_none=sets.none,
        required_tags=tuple(given.required_tags or ()),
        any_tags=tuple(given.any_tags or ()),
        excluded_tags=tuple(given.excluded_tags or ()),
        projects=None if given.projects is None else tuple(given.projects),
        created_after=given.created_after,
        created_before=given.created_before,
        starred=given.starred,
        archived=given.archived,
    )


async def _scopes(info: Info, memories: list[str] | None) -> list[model.Scope]:
    """Each memory searched, entered (NOT_FOUND if missing or not readable), with what the
    caller may read in it."""
    context = info.context
    if memories is None:
        return [model.Scope(*await context.scoped_memory())]
    if not 1 <= len(memories) <= MAX_MEMORIES:
        raise BadUserInput(f"Give 1 to {MAX_MEMORIES} memories", field="memories")
    return [model.Scope(name, await context.visibility(name)) for name in dict.fromkeys(memories)]


async def _concept_sets(
    info: Info, scopes: list[model.Scope], given: SearchFilter | None
) -> ConceptSets:
    """The concept filter's sets; concepts belong to one memory, so a concept filter
    searches one memory only."""
    if given is None or given.concepts is None:
        return ConceptSets()
    if len(scopes) != 1:
        raise BadUserInput(
            "Concept filters name one memory's concepts; search one memory with them",
            field="filter.concepts",
        )
    return await concept_sets(info, scopes[0].memory, given.concepts)


def _selects(selections: Sequence[Selection], path: tuple[str, ...]) -> bool:
    """Whether ``path`` (field names from here down) is selected, through fragments too."""
    for selection in selections:
        if not isinstance(selection, SelectedField):  # a fragment: the same level
            if _selects(selection.selections, path):
                return True
        elif selection.name == path[0] and (
            len(path) == 1 or _selects(selection.selections, path[1:])
        ):
            return True
    return False


def _hit(hit: model.Hit, *, explain: bool) -> SearchHit:
    note = hit.note
    if note is None:
        raise RuntimeError("the search service returned a hit without its note")
    return SearchHit(
        note=Note.from_model(note, memory=hit.memory),
        memory=hit.memory,
        score=hit.score,
        chunk=hit.chunk,
        explain=HitExplain(
            lexical_rank=hit.lexical_rank,
            lexical_score=hit.lexical_score,
            semantic_rank=hit.semantic_rank,
            semantic_score=hit.semantic_score,
            fused_score=hit.score,
        )
        if explain
        else None,
    )


def _results(outcome: model.SearchOutcome, *, explain: bool) -> SearchResults:
    plan = outcome.fusion
    read = outcome.lexical
    return SearchResults(
        lexical=LexicalExplain(
            path=read.path, postings_read=read.postings_read, postings_total=read.postings_total
        )
        if explain and read is not None
        else None,
        semantic=SemanticExplain(path=outcome.semantic_path, ef_search=outcome.ef_search)
        if explain and outcome.semantic_path is not None
        else None,
        hits=[_hit(hit, explain=explain) for hit in outcome.hits],
        degraded=outcome.degraded,
        degraded_reason=outcome.degraded_reason,
        took_ms=outcome.took_ms,
        fusion=None
        if plan is None
        else SearchFusion(
            query_type=outcome.query_type.value,
            k=plan.k,
            lexical_weight=plan.lexical_weight,
            semantic_weight=plan.semantic_weight,
        ),
    )


@strawberry.type
class SearchQuery:
    @strawberry.field(description="Find notes by words and meaning")
    async def search(
        self,
        info: Info,
        query: str,
        mode: SearchMode = SearchMode.HYBRID,
        fusion: Fusion = Fusion.RRF,
        alpha: Annotated[
            float | None,
            strawberry.argument(description="Semantic weight 0..1 (lexical gets the rest)"),
        ] = None,
        k: Annotated[int | None, strawberry.argument(description="RRF's k (default 60)")] = None,
        adaptive_k: Annotated[
            bool,
            strawberry.argument(description="RRF's k by query type: smaller for short or quoted"),
        ] = False,
        limit: int = 10,
        filter: SearchFilter | None = None,
        explain: bool = False,
        memories: Annotated[
            list[str] | None,
            strawberry.argument(
                description="Search these memories together (default: the request's)"
            ),
        ] = None,
        ef_search: Annotated[
            int | None,
            strawberry.argument(
                description="HNSW candidate list size, 10..1000 (default: grows with the "
                "embedding set, 150 at 10,000 chunks)"
            ),
        ] = None,
        lexical_pruning: Annotated[
            bool | None,
            strawberry.argument(
                description="Lexical top-k by the pruned path (true) or by scoring every "
                "posting (false); default: the server's setting. The results are the same"
            ),
        ] = None,
    ) -> SearchResults:
        services = info.context.services
        scopes = await _scopes(info, memories)
        sets = await _concept_sets(info, scopes, filter)
        outcome = await services.search.search(
            scopes,
            model.SearchRequest(
                query=query,
                mode=model.SearchMode(mode.value),
                fusion=model.FusionMode(fusion.value),
                alpha=alpha,
                k=k,
                adaptive=adaptive_k,
                limit=limit,
                filter=_filter(filter, sets),
                ef_search=ef_search,
                lexical_pruning=lexical_pruning,
                # Each lexical hit's best chunk is one more statement: made when asked for.
                chunks=_selects(
                    [s for f in info.selected_fields for s in f.selections], ("hits", "chunk")
                ),
            ),
        )
        return _results(outcome, explain=explain)

    @strawberry.field(description="How much of this memory is searchable yet")
    async def search_index_status(self, info: Info) -> SearchIndexStatus:
        memory = await info.context.memory()
        status = await info.context.services.search.index_status(memory)
        return SearchIndexStatus(
            notes=status.notes,
            chunks=status.chunks,
            embedded_chunks=status.embedded_chunks,
            pending_embedding_jobs=status.pending_embedding_jobs,
            model=status.model,
        )
