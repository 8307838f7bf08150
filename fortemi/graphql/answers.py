"""``ask`` and ``askStream``: a question answered by a generation model from its
retrieval plan, with the chunks it cited.

``ask`` is a query: it changes nothing in the memory (like ``retrieve``, whose plan it
computes with the same planner and the same access checks), so it may run beside other
queries in one request. ``askStream`` is a subscription sending the plan first, then
the answer's text as the model writes it, then the final answer with its citations and
figures; it ends when the caller's token expires, like every subscription.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Annotated

import strawberry

from fortemi.graphql.context import Info
from fortemi.graphql.reauthorization import Reauthorized
from fortemi.graphql.retrieve import (
    PlanNote,
    RetrievalPlan,
    RetrieveInput,
    note_of,
    plan_access,
    plan_of,
)
from fortemi.graphql.subscriptions import until_token_expires
from fortemi.wiki.answers import models as model
from fortemi.wiki.retrieve.models import RetrieveRequest

__all__ = ["AnswerQuery", "AnswerSubscription"]


@strawberry.enum(description="Which configured generation model answers")
class AnswerTier(enum.Enum):
    FAST = "fast"
    STANDARD = "standard"


@strawberry.input(description="A question to answer from a vault's notes")
class AskInput(RetrieveInput):
    tier: AnswerTier = strawberry.field(
        default=AnswerTier.FAST, description="Which configured generation model answers"
    )


@strawberry.type(description="A selected chunk the answer cites")
class Citation:
    number: int = strawberry.field(description="As cited in the answer: [number]")
    note: PlanNote
    path: str | None = strawberry.field(description="The note's vault-relative path")
    heading: str | None = strawberry.field(description="Heading path above the chunk")


@strawberry.type(description="An answer from the selected chunks, or why there is none")
class Answer:
    answer: str | None = strawberry.field(description="The model's answer (null: see reason)")
    citations: list[Citation] = strawberry.field(description="In order of first mention")
    dropped_citations: int = strawberry.field(
        description="Distinct cited numbers naming no selected chunk (dropped)"
    )
    plan: RetrievalPlan
    llm_calls: int = strawberry.field(
        description="Generation calls: 0, 1, or 2 when the first was empty or cut off"
    )
    model: str | None
    degraded: bool = strawberry.field(description="No generation backend: only the plan")
    degraded_reason: str | None = strawberry.field(description="generation_unavailable")
    reason: str | None = strawberry.field(
        description="Why the answer is null or partial: no_relevant_context, "
        "generation_unavailable, empty_answer, answer_truncated"
    )
    finish_reason: str | None = strawberry.field(description="As the backend said: stop, length")
    took_ms: float
    prompt_tokens: int = strawberry.field(description="The prompt's tokens (the plan's count)")
    tokens_evaluated: int | None = strawberry.field(
        description="Prompt tokens the server evaluated, over all calls (Ollama's "
        "prompt_eval_count: fewer than the prompt's when its prefix cache hit)"
    )
    prefix_hash: str | None = strawberry.field(description="As the plan's prefixHash")


@strawberry.enum(description="What an askStream message carries")
class AskStreamKind(enum.Enum):
    PLAN = "plan"
    TOKEN = "token"  # noqa: S105  # a message kind, not a secret
    RETRY = "retry"
    ANSWER = "answer"


@strawberry.type(description="One message of askStream: the plan, a token, a retry, the answer")
class AskStreamMessage:
    kind: AskStreamKind
    plan: RetrievalPlan | None = strawberry.field(default=None, description="With PLAN")
    token: str | None = strawberry.field(
        default=None, description="With TOKEN: the next piece of text"
    )
    retry: str | None = strawberry.field(
        default=None, description="With RETRY: empty or length; the text so far is discarded"
    )
    answer: Answer | None = strawberry.field(
        default=None, description="With ANSWER, the last message"
    )


def answer_of(answer: model.Answer, *, explain: bool) -> Answer:
    return Answer(
        answer=answer.text,
        citations=[
            Citation(
                number=c.number, note=note_of(c.chunk), path=c.chunk.path, heading=c.chunk.heading
            )
            for c in answer.citations
        ],
        dropped_citations=answer.dropped_citations,
        plan=plan_of(answer.plan, explain=explain),
        llm_calls=answer.llm_calls,
        model=answer.model,
        degraded=answer.degraded,
        degraded_reason=answer.reason if answer.degraded else None,
        reason=answer.reason,
        finish_reason=answer.finish_reason,
        took_ms=answer.took_ms,
        prompt_tokens=answer.prompt_tokens,
        tokens_evaluated=answer.tokens_evaluated,
        prefix_hash=answer.prefix_hash,
    )


def _request(input: AskInput) -> model.AskRequest:
    return model.AskRequest(
        RetrieveRequest(
            question=input.question,
            project=input.project,
            vault=input.vault,
            token_budget=input.token_budget,
            explain=input.explain,
        ),
        tier=input.tier.value,
    )


@strawberry.type
class AnswerQuery:
    @strawberry.field(
        description="A question answered by a generation model from the chunks retrieve "
        "would select (same access, same plan), citing them; no model call when nothing "
        "relevant is found or no generation backend is configured"
    )
    async def ask(self, info: Info, input: Annotated[AskInput, strawberry.argument()]) -> Answer:
        memory, visibility, skills = await plan_access(info, input.project)
        answer = await info.context.services.answers.ask(
            memory, visibility, _request(input), skills
        )
        return answer_of(answer, explain=input.explain)


@strawberry.type
class AnswerSubscription:
    @strawberry.subscription(
        description="ask, streamed: the plan first, then the answer's tokens as they are "
        "generated (RETRY before a second call), then the answer with citations and figures"
    )
    async def ask_stream(
        self, info: Info, input: Annotated[AskInput, strawberry.argument()]
    ) -> AsyncGenerator[AskStreamMessage, None]:
        # Decided again before each message whenever the policies or the token changed:
        # a subscriber who lost the project mid-answer gets FORBIDDEN and the stream ends.
        access = Reauthorized(info, lambda: plan_access(info, input.project, fresh=True))
        memory, visibility, skills = await access.current()
        source = info.context.services.answers.stream(memory, visibility, _request(input), skills)
        async with aclosing(source):  # ending the subscription ends the model's request
            async for _, event in access.watch(until_token_expires(info, source)):
                if isinstance(event, model.PlanReady):
                    plan = plan_of(event.plan, explain=input.explain)
                    yield AskStreamMessage(kind=AskStreamKind.PLAN, plan=plan)
                elif isinstance(event, model.Token):
                    yield AskStreamMessage(kind=AskStreamKind.TOKEN, token=event.text)
                elif isinstance(event, model.Retrying):
                    yield AskStreamMessage(kind=AskStreamKind.RETRY, retry=event.reason)
                else:
                    answer = answer_of(event, explain=input.explain)
                    yield AskStreamMessage(kind=AskStreamKind.ANSWER, answer=answer)
