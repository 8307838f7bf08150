"""The retrieval plan of a question (issue 13, part 3), without calling a model.

:meth:`RetrievalPlanner.plan` takes a caller already admitted to the memory and, when a
project is named, already allowed to read it (the GraphQL layer decides and audits that
before anything here runs), and then:

1. scopes: the project's notes from the :class:`~fortemi.wiki.retrieve.scope.ScopeResolver`,
   intersected in SQL with what the caller may read (no project: the readable memory);
2. routes: TF-IDF within that scope, the best ``documents`` notes; the memory-wide
   readable scope when the project's finds nothing (:mod:`~fortemi.wiki.retrieve.router`);
   skills the caller may not read are dropped there, each decided and audited once;
3. scores only the routed notes' chunks: TF-IDF, metadata match, exact cosine;
4. fuses, thresholds, takes the top and removes near-duplicates
   (:mod:`~fortemi.wiki.retrieve.selector`);
5. fits the token budget and lays the prompt out for the prefix cache
   (:mod:`~fortemi.wiki.retrieve.layout`).

An empty selection is a plan that abstains, with its reason: the system saying it does
not know, not an error.
"""

from __future__ import annotations

import time
from dataclasses import replace

from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.metrics import RETRIEVAL_PLAN_SECONDS
from fortemi.platform.notes.models import NameSet, NoteVisibility
from fortemi.retrieval.service import NoteScope, ScopedRetrieval
from fortemi.wiki.retrieve.layout import ApproximateTokens, TokenCounter, lay_out
from fortemi.wiki.retrieve.models import (
    MAX_QUESTION_CHARS,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    Candidate,
    PlanSettings,
    RetrievalPlan,
    RetrieveRequest,
)
from fortemi.wiki.retrieve.router import Routed, Router, SkillGate
from fortemi.wiki.retrieve.scope import ProjectAndSharedScope, ScopeResolver
from fortemi.wiki.retrieve.selector import candidates, select

__all__ = ["RetrievalPlanner"]

# Why a plan is empty (``RetrievalPlan.reason``).
NO_MATCHING_NOTES = "no_matching_notes"  # no readable note in scope shares a word
BELOW_THRESHOLD = "below_relevance_threshold"  # chunks found, none relevant enough
QUESTION_OVER_BUDGET = "question_over_budget"  # instructions + question exceed the budget
NOTHING_FITS = "no_chunk_fits_budget"


class RetrievalPlanner:
    def __init__(
        self,
        retrieval: ScopedRetrieval,
        settings: PlanSettings,
        *,
        resolver: ScopeResolver | None = None,
        tokens: TokenCounter | None = None,
    ) -> None:
        """``resolver``: the seam for a project's reachable notes (default: the project's
        own plus every shared note without a skill)."""
        self._retrieval = retrieval
        self._settings = settings
        self._router = Router(retrieval, resolver or ProjectAndSharedScope(retrieval))
        self._tokens = tokens or ApproximateTokens()

    async def plan(
        self,
        memory: str,
        visibility: NoteVisibility,
        request: RetrieveRequest,
        skills: SkillGate,
    ) -> RetrievalPlan:
        """The plan, timed in ``fortemi_retrieval_plan_seconds``: every plan asked for is
        counted, so an operator (and a test over HTTP) can see that a refused question
        never reached the search."""
        started = time.perf_counter()
        scope, outcome = ("memory" if request.project is None else "project"), "error"
        try:
            plan = await self._plan(memory, visibility, request, skills)
            scope, outcome = plan.scope, plan.reason or "answered"
            return plan
        finally:
            RETRIEVAL_PLAN_SECONDS.labels(scope, outcome).observe(time.perf_counter() - started)

    async def _plan(
        self,
        memory: str,
        visibility: NoteVisibility,
        request: RetrieveRequest,
        skills: SkillGate,
    ) -> RetrievalPlan:
        started = time.perf_counter()
        question = _check(request)
        if request.project is not None:
            await self._known_project(memory, request.project, request.vault)
        routed = await self._router.route(
            memory, question, project=request.project, vault=request.vault,
            visibility=visibility, documents=self._settings.documents, skills=skills,
        )  # fmt: skip
        ranking = routed.ranking
        if not ranking.documents:
            return self._empty(request, routed, NO_MATCHING_NOTES, started)
        ranking = await self._retrieval.chunks(memory, question, routed.scope, ranking)
        routed = replace(routed, ranking=ranking)
        found = candidates(ranking.chunks, sum(w.qtf * w.idf for w in ranking.weights))
        kept = select(found, self._settings)
        found.sort(key=lambda c: (-c.fused, c.chunk_id))
        if not kept:
            return self._empty(request, routed, BELOW_THRESHOLD, started, found)
        layout = lay_out(kept, question, request.project, request.token_budget, self._tokens)
        if layout is None:
            return self._empty(request, routed, QUESTION_OVER_BUDGET, started, found)
        if not layout.chunks:
            return self._empty(request, routed, NOTHING_FITS, started, found)
        return RetrievalPlan(
            chunks=layout.chunks,
            abstained=False,
            reason=None,
            tokens_used=layout.tokens_used,
            token_budget=request.token_budget,
            took_ms=(time.perf_counter() - started) * 1000,
            prefix_hash=layout.prefix_hash,
            prompt=layout.prompt,
            candidates=found,
            strategy=self._strategy(request, routed),
            scope=routed.kind,
            scope_notes=ranking.scope_notes,
            fell_back=routed.fell_back,
            chunks_scored=len(ranking.chunks),
            chunks_in_scope=ranking.chunks_in_scope,
            degraded=ranking.degraded,
            dropped_skills=routed.dropped_skills,
        )

    async def _known_project(self, memory: str, project: str, vault: str | None) -> None:
        """NOT_FOUND for a project with no live note (in ``vault``): asked after the
        caller was allowed to read it, so the answer reveals nothing a deny would hide."""
        own = NoteVisibility(
            memory_notes=False, projects=NameSet(frozenset({project})), skills=NameSet()
        )
        if not await self._retrieval.has_notes(memory, NoteScope(own, vault)):
            where = f" in vault {vault!r}" if vault is not None else ""
            raise NotFound(f"No project {project!r}{where} has notes in this memory")

    def _empty(
        self,
        request: RetrieveRequest,
        routed: Routed,
        reason: str,
        started: float,
        found: list[Candidate] | None = None,
    ) -> RetrievalPlan:
        ranking = routed.ranking
        return RetrievalPlan(
            chunks=[],
            abstained=True,
            reason=reason,
            tokens_used=0,
            token_budget=request.token_budget,
            took_ms=(time.perf_counter() - started) * 1000,
            prefix_hash=None,
            prompt=None,
            candidates=found or [],
            strategy=self._strategy(request, routed),
            scope=routed.kind,
            scope_notes=ranking.scope_notes,
            fell_back=routed.fell_back,
            chunks_scored=len(ranking.chunks),
            chunks_in_scope=ranking.chunks_in_scope,
            degraded=ranking.degraded,
            dropped_skills=routed.dropped_skills,
        )

    def _strategy(self, request: RetrieveRequest, routed: Routed) -> str:
        s = self._settings
        if routed.kind == "project":
            scope = f"project {request.project!r} (its notes and the shared notes it reaches)"
        elif routed.fell_back:
            scope = (
                f"the memory's readable notes (project {request.project!r} matched no word "
                "of the question)"
            )
        else:
            scope = "the memory's readable notes"
        if request.vault is not None:
            scope += f", vault {request.vault!r}"
        semantic = (
            f"exact cosine re-rank of their chunks ({routed.ranking.degraded}: lexical only)"
            if routed.ranking.degraded
            else "exact cosine re-rank of their chunks"
        )
        return (
            f"TF-IDF (natural-log IDF within the scope, metadata boost {s.metadata_boost:g}) "
            f"over {scope}; top {s.documents} notes; {semantic}; weighted RRF "
            f"({s.tfidf_weight:g} TF-IDF / {s.semantic_weight:g} semantic, k {s.rrf_k}); "
            f"relevance >= {s.min_relevance:g} cosine and within {s.relative_relevance:g} of "
            f"the best; top {s.top_chunks}; near-duplicates at Jaccard >= "
            f"{s.duplicate_jaccard:g} of {s.shingle_words}-word shingles; "
            f"{request.token_budget} token budget; prompt in cache-distance order"
        )


def _check(request: RetrieveRequest) -> str:
    question = request.question.strip()
    if not question:
        raise BadUserInput("Ask a question: it is empty", field="question")
    if len(question) > MAX_QUESTION_CHARS:
        raise BadUserInput(
            f"The question is {len(question):,} characters; ask in at most {MAX_QUESTION_CHARS:,}",
            field="question",
        )
    budget = request.token_budget
    if not MIN_TOKEN_BUDGET <= budget <= MAX_TOKEN_BUDGET:
        raise BadUserInput(
            f"tokenBudget must be {MIN_TOKEN_BUDGET} to {MAX_TOKEN_BUDGET}", field="tokenBudget"
        )
    return question
