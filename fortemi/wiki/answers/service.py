"""A question answered from its retrieval plan (issue 13, part 4).

:meth:`AnswerService.ask` makes the plan with the same :class:`RetrievalPlanner` that
``retrieve`` uses (so access and scope are exactly retrieve's), then:

* the plan abstained: no model call; the answer is null, reason ``no_relevant_context``;
* the backend cannot generate (the embedded default): no call; ``degraded``, reason
  ``generation_unavailable``, the plan still returned;
* else one generation call on the plan's prompt. A second call only when the first
  answered nothing or was cut off by its token limit (``finish_reason == "length"``);
  the second has a larger limit. The prompt is the same, so a server with a prefix
  cache evaluates little of it again.

Citations are the numbers the model wrote in brackets that name a selected chunk; the
others are dropped and counted. Backend failures propagate as
:class:`~fortemi.inference.errors.InferenceError` (``SERVICE_UNAVAILABLE``).

Every call that finishes or fails is counted in the ``fortemi_generation_*`` metrics
(:mod:`fortemi.platform.metrics`); a stream its subscriber leaves is not.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

from fortemi.inference.backend import Generation, GenerationTier, InferenceBackend, generate_stream
from fortemi.inference.errors import InferenceError
from fortemi.platform.metrics import GENERATION_CALLS, GENERATION_SECONDS, GENERATION_TOKENS
from fortemi.platform.notes.models import NoteVisibility
from fortemi.wiki.answers.citations import cited
from fortemi.wiki.answers.models import (
    EMPTY_ANSWER,
    GENERATION_UNAVAILABLE,
    NO_RELEVANT_CONTEXT,
    TRUNCATED,
    Answer,
    AskRequest,
    PlanReady,
    Retrying,
    StreamEvent,
    Token,
)
from fortemi.wiki.retrieve.models import RetrievalPlan
from fortemi.wiki.retrieve.router import SkillGate
from fortemi.wiki.retrieve.service import RetrievalPlanner

__all__ = ["AnswerService", "AnswerSettings"]


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    """``FORTEMI_ANSWER_*`` (see the settings); these defaults are theirs."""

    max_tokens: int = 1024  # of the answer, first call
    retry_max_tokens: int = 4096  # of the answer, when the first was cut off
    temperature: float = 0.0  # answers from context: no creativity wanted


class AnswerService:
    def __init__(
        self,
        planner: RetrievalPlanner,
        backend: InferenceBackend,
        settings: AnswerSettings | None = None,
    ) -> None:
        self._planner = planner
        self._backend = backend
        self._settings = settings or AnswerSettings()

    async def ask(
        self, memory: str, visibility: NoteVisibility, request: AskRequest, skills: SkillGate
    ) -> Answer:
        """The answer, in one piece: one (rarely two) non-streaming calls."""
        async for event in self._run(memory, visibility, request, skills, streaming=False):
            if isinstance(event, Answer):
                return event
        raise AssertionError("an answer run always ends with its answer")  # pragma: no cover

    def stream(
        self, memory: str, visibility: NoteVisibility, request: AskRequest, skills: SkillGate
    ) -> AsyncGenerator[StreamEvent, None]:
        """The plan first, then the answer's text as it is generated (a ``Retrying``
        before a second call), then the :class:`Answer` with citations and figures."""
        return self._run(memory, visibility, request, skills, streaming=True)

    async def _run(
        self,
        memory: str,
        visibility: NoteVisibility,
        request: AskRequest,
        skills: SkillGate,
        *,
        streaming: bool,
    ) -> AsyncGenerator[StreamEvent, None]:
        started = time.perf_counter()
        plan = await self._planner.plan(memory, visibility, request.retrieve, skills)
        yield PlanReady(plan)
        degraded = not self._backend.can_generate
        if plan.abstained or plan.prompt is None or degraded:
            why = NO_RELEVANT_CONTEXT if plan.abstained else GENERATION_UNAVAILABLE
            yield self._answer(plan, started, None, [], degraded=degraded, reason=why)
            return
        calls: list[Generation] = []
        limit = self._settings.max_tokens
        while True:
            called = time.perf_counter()
            try:
                if streaming:
                    generation: Generation | None = None
                    stream = generate_stream(
                        self._backend, plan.prompt, tier=request.tier, max_tokens=limit,
                        temperature=self._settings.temperature,
                    )  # fmt: skip
                    async with aclosing(stream):  # a subscriber who leaves ends the request
                        async for item in stream:
                            if isinstance(item, Generation):
                                generation = item
                            else:
                                yield Token(item)
                    if generation is None:  # generate_stream always ends with it
                        raise RuntimeError("the generation stream ended without its result")
                else:
                    generation = await self._backend.generate(
                        plan.prompt, tier=request.tier, max_tokens=limit,
                        temperature=self._settings.temperature,
                    )  # fmt: skip
            except InferenceError as exc:
                _failed(request.tier, exc.model, called)
                raise
            _called(request.tier, generation, plan.tokens_used, called)
            calls.append(generation)
            retry = _retry_reason(generation)
            if retry is None or len(calls) == 2:
                break
            if retry == "length":
                limit = self._settings.retry_max_tokens
            if streaming:
                yield Retrying(retry)
        last = calls[-1]
        text: str | None = last.text.strip() or None
        reason: str | None = None
        if text is None:
            reason = EMPTY_ANSWER
        elif last.finish_reason == "length":
            reason = TRUNCATED
        yield self._answer(plan, started, text, calls, degraded=False, reason=reason)

    def _answer(
        self,
        plan: RetrievalPlan,
        started: float,
        text: str | None,
        calls: list[Generation],
        *,
        degraded: bool,
        reason: str | None,
    ) -> Answer:
        citations, dropped = cited(text, plan.chunks) if text else ([], 0)
        evaluated = [c.prompt_tokens for c in calls if c.prompt_tokens is not None]
        return Answer(
            text=text,
            citations=citations,
            dropped_citations=dropped,
            plan=plan,
            llm_calls=len(calls),
            model=calls[-1].model if calls else None,
            degraded=degraded,
            reason=reason,
            took_ms=(time.perf_counter() - started) * 1000,
            prompt_tokens=plan.tokens_used,
            tokens_evaluated=sum(evaluated) if evaluated else None,
            finish_reason=calls[-1].finish_reason if calls else None,
        )


def _called(tier: GenerationTier, generation: Generation, prompt_tokens: int, since: float) -> None:
    """One finished call in the metrics: its outcome, duration and tokens."""
    if not generation.text.strip():
        outcome = "empty"
    elif generation.finish_reason == "length":
        outcome = "length"
    else:
        outcome = "stop"
    model = generation.model or "unknown"
    GENERATION_CALLS.labels(tier, model, outcome).inc()
    GENERATION_SECONDS.labels(tier, model, outcome).observe(time.perf_counter() - since)
    GENERATION_TOKENS.labels(tier, model, "prompt").inc(prompt_tokens)
    if generation.prompt_tokens is not None:
        GENERATION_TOKENS.labels(tier, model, "evaluated").inc(generation.prompt_tokens)
    if generation.completion_tokens is not None:
        GENERATION_TOKENS.labels(tier, model, "answer").inc(generation.completion_tokens)


def _failed(tier: GenerationTier, model: str | None, since: float) -> None:
    labels = (tier, model or "unknown", "error")
    GENERATION_CALLS.labels(*labels).inc()
    GENERATION_SECONDS.labels(*labels).observe(time.perf_counter() - since)


def _retry_reason(generation: Generation) -> str | None:
    if not generation.text.strip():
        return "empty"
    if generation.finish_reason == "length":
        return "length"
    return None
