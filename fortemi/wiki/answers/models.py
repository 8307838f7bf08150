"""Value objects of an answer: what is asked, the answer, and what a stream sends."""

from __future__ import annotations

from dataclasses import dataclass

from fortemi.inference.backend import GenerationTier
from fortemi.wiki.retrieve.models import Candidate, RetrievalPlan, RetrieveRequest

__all__ = [
    "EMPTY_ANSWER",
    "GENERATION_UNAVAILABLE",
    "NO_RELEVANT_CONTEXT",
    "TRUNCATED",
    "Answer",
    "AskRequest",
    "Citation",
    "PlanReady",
    "Retrying",
    "StreamEvent",
    "Token",
]

# Why an answer is null or partial (``Answer.reason``).
NO_RELEVANT_CONTEXT = "no_relevant_context"  # the plan abstained: no model call
GENERATION_UNAVAILABLE = "generation_unavailable"  # no backend that generates (degraded)
EMPTY_ANSWER = "empty_answer"  # the model answered nothing, twice
TRUNCATED = "answer_truncated"  # cut off by length, twice: the text is partial


@dataclass(frozen=True, slots=True)
class AskRequest:
    retrieve: RetrieveRequest
    tier: GenerationTier = "fast"


@dataclass(frozen=True, slots=True)
class Citation:
    number: int  # as the model wrote it: [number]
    chunk: Candidate


@dataclass(frozen=True, slots=True)
class Answer:
    text: str | None
    citations: list[Citation]
    dropped_citations: int  # distinct cited numbers that name no selected chunk
    plan: RetrievalPlan
    llm_calls: int
    model: str | None
    degraded: bool
    reason: str | None
    took_ms: float
    prompt_tokens: int  # the prompt's tokens as the plan counts them, per call
    tokens_evaluated: int | None  # what the server evaluated, summed over the calls
    finish_reason: str | None

    @property
    def prefix_hash(self) -> str | None:
        return self.plan.prefix_hash


@dataclass(frozen=True, slots=True)
class PlanReady:
    plan: RetrievalPlan


@dataclass(frozen=True, slots=True)
class Token:
    text: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """The text sent so far is discarded: a second call answers again."""

    reason: str  # "empty" or "length"


StreamEvent = PlanReady | Token | Retrying | Answer
