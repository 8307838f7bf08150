"""``retrieve``: a question's retrieval plan inside a memory (and a vault's project),
without calling a model: the chunks that answer, laid out for a prompt.

Access first: the caller enters the memory (NOT_FOUND if they may not) and, when a
project is named, must be allowed to read it: a deny is FORBIDDEN with the policy's
reason, recorded in the audit log, before any search runs. Skills met on the way are
decided by the same authorizer, each recorded once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

import strawberry

from fortemi.auth.decision import Action, Resource, ResourceType
from fortemi.graphql.context import Info
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes.models import NoteVisibility
from fortemi.wiki.retrieve import models as model
from fortemi.wiki.retrieve.router import SkillGate

__all__ = ["RetrievalPlan", "RetrieveQuery", "note_of", "plan_access", "plan_of", "request_of"]


@strawberry.input(description="A question to plan the retrieval of")
class RetrieveInput:
    question: str
    project: str | None = strawberry.field(
        default=None, description="Answer within this project's reach (default: the memory)"
    )
    vault: str | None = strawberry.field(
        default=None, description="Only notes synced from this vault"
    )
    token_budget: int = strawberry.field(
        default=4096, description="Most tokens of the whole prompt (256 to 200,000)"
    )
    explain: bool = strawberry.field(
        default=False, description="Report every candidate chunk with its scores"
    )


@strawberry.type(description="The note a chunk comes from")
class PlanNote:
    id: strawberry.ID = strawberry.field(description="The note's global id (as Note.id)")
    title: str
    path: str | None = strawberry.field(description="Vault-relative path (metadata.path)")
    project: str | None
    skill: str | None


@strawberry.type(description="A chunk the plan hands to the model")
class SelectedChunk:
    note: PlanNote
    heading: str | None = strawberry.field(description="Heading path above the chunk")
    text: str
    position: int = strawberry.field(description="The chunk's position in its note, from 0")
    score: float = strawberry.field(description="Fused (weighted RRF) score")
    relevance: float = strawberry.field(
        description="Cosine to the question (without vectors: share of its IDF weight)"
    )
    tokens: int


@strawberry.type(description="A chunk that was scored, selected or not")
class RetrievalCandidate:
    note: PlanNote
    heading: str | None
    position: int
    tfidf_score: float = strawberry.field(description="TF-IDF of the chunk's text")
    metadata_score: float = strawberry.field(
        description="IDF weight of question words in heading, first sentence, key terms"
    )
    semantic_score: float | None = strawberry.field(description="Cosine to the question")
    fused_score: float
    selected: bool
    dropped: str | None = strawberry.field(
        description="Why not selected: below_relevance_threshold, beyond_top, "
        "near_duplicate, over_budget"
    )


@strawberry.type(description="What a question would hand a model, and how it was chosen")
class RetrievalPlan:
    chunks: list[SelectedChunk] = strawberry.field(description="In prompt order")
    abstained: bool = strawberry.field(description="Nothing relevant: the plan is empty")
    reason: str | None = strawberry.field(
        description="Why it abstained: no_matching_notes, below_relevance_threshold, "
        "question_over_budget, no_chunk_fits_budget"
    )
    tokens_used: int
    token_budget: int
    took_ms: float
    prefix_hash: str | None = strawberry.field(
        description="BLAKE3 of the prompt before the question: equal hashes share a prefix"
    )
    prompt: str | None = strawberry.field(description="The laid-out prompt")
    candidates: list[RetrievalCandidate] | None = strawberry.field(
        description="Every scored chunk, best fused first (with explain)"
    )
    candidate_count: int
    strategy: str
    scope: str = strawberry.field(description="project, or memory (no project, or fallback)")
    fell_back: bool = strawberry.field(
        description="The project's scope matched nothing; the memory's was searched"
    )
    scope_notes: int = strawberry.field(description="Indexed notes in the scope searched")
    chunks_scored: int = strawberry.field(description="Chunks scored after TF-IDF routing")
    chunks_in_scope: int = strawberry.field(
        description="Chunks a semantic search over the whole scope would score"
    )
    search_space_cut: float = strawberry.field(
        description="Share of the scope's chunks routing spared from scoring (0..1)"
    )
    degraded: bool = strawberry.field(description="The semantic re-rank could not run")
    degraded_reason: str | None
    dropped_skills: int = strawberry.field(
        description="Skills the caller may not read whose notes were dropped (audited)"
    )


def note_of(c: model.Candidate) -> PlanNote:
    return PlanNote(
        id=strawberry.ID(to_global_id("Note", c.note_id)),
        title=c.title,
        path=c.path,
        project=c.project,
        skill=c.skill,
    )


def plan_of(plan: model.RetrievalPlan, *, explain: bool) -> RetrievalPlan:
    return RetrievalPlan(
        chunks=[
            SelectedChunk(
                note=note_of(c),
                heading=c.heading,
                text=c.text,
                position=c.ordinal,
                score=c.fused,
                relevance=c.relevance,
                tokens=c.tokens,
            )
            for c in plan.chunks
        ],
        abstained=plan.abstained,
        reason=plan.reason,
        tokens_used=plan.tokens_used,
        token_budget=plan.token_budget,
        took_ms=plan.took_ms,
        prefix_hash=plan.prefix_hash,
        prompt=plan.prompt,
        candidates=[
            RetrievalCandidate(
                note=note_of(c),
                heading=c.heading,
                position=c.ordinal,
                tfidf_score=c.tfidf,
                metadata_score=c.metadata,
                semantic_score=c.semantic,
                fused_score=c.fused,
                selected=c.dropped is None,
                dropped=c.dropped,
            )
            for c in plan.candidates
        ]
        if explain
        else None,
        candidate_count=len(plan.candidates),
        strategy=plan.strategy,
        scope=plan.scope,
        fell_back=plan.fell_back,
        scope_notes=plan.scope_notes,
        chunks_scored=plan.chunks_scored,
        chunks_in_scope=plan.chunks_in_scope,
        search_space_cut=plan.search_space_cut,
        degraded=plan.degraded is not None,
        degraded_reason=plan.degraded,
        dropped_skills=len(plan.dropped_skills),
    )


@strawberry.type
class RetrieveQuery:
    @strawberry.field(
        description="The chunks that answer a question, within what the caller may read, "
        "laid out for a model's prompt; no model is called"
    )
    async def retrieve(
        self, info: Info, input: Annotated[RetrieveInput, strawberry.argument()]
    ) -> RetrievalPlan:
        memory, visibility, skills = await plan_access(info, input.project)
        plan = await info.context.services.retrieve.plan(
            memory, visibility, request_of(input), skills
        )
        return plan_of(plan, explain=input.explain)


async def plan_access(
    info: Info, project: str | None, *, fresh: bool = False
) -> tuple[str, NoteVisibility, SkillGate]:
    """The memory, the caller's read scope and the skill gate of a plan: the caller
    enters the memory and, when a project is named, must be allowed to read it (decided
    and audited before any search runs). ``fresh``: decided again even if done before
    on this connection (a subscription after a policy or token change)."""
    context = info.context
    if fresh:
        memory = await context.memory()
        visibility = await context.visibility(memory, fresh=True)
    else:
        memory, visibility = await context.scoped_memory()
    if project is not None:
        await context.authorize(Action.READ, Resource(ResourceType.PROJECT, project, memory))

    async def readable_skills(names: Iterable[str]) -> set[str]:
        asks = [(Action.READ, Resource(ResourceType.SKILL, name, memory)) for name in names]
        decisions = await context.services.authorizer.decide_all(
            context.caller, asks, context.trace
        )
        return {d.resource.name for d in decisions if d.allowed and d.resource.name}

    return memory, visibility, readable_skills


def request_of(input: RetrieveInput) -> model.RetrieveRequest:
    return model.RetrieveRequest(
        question=input.question,
        project=input.project,
        vault=input.vault,
        token_budget=input.token_budget,
        explain=input.explain,
    )
