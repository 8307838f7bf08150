"""The prompt a plan hands to a model, laid out for its prefix cache.

A model server caches the key/value state of a prompt's prefix: two prompts that start
with the same text skip re-reading it. So the layout is deterministic and puts what
changes least first: fixed instructions; then the selected chunks ordered by *cache
distance* (the project's own notes, then other projects', then shared notes, then
skills; within that by note (path) and by position in the note, so the same chunk is
always in the same place and adjacent chunks of one note sit together), never by score,
which changes with every question; the question last. ``prefix_hash`` is the BLAKE3 hash
of everything before the question: two questions with the same hash share that prefix.

Tokens are counted with :class:`ApproximateTokens` unless a tokenizer is given: no
generation model's tokenizer is known to the embedded default. It counts the larger of
one token per 4 characters (the usual rate for English with BPE tokenizers) and one per
word or punctuation mark, so it errs on the side of a fuller count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import blake3

from fortemi.wiki.retrieve.models import Candidate

__all__ = ["INSTRUCTIONS", "ApproximateTokens", "Layout", "TokenCounter", "lay_out"]

INSTRUCTIONS = (
    "Answer the question using only the numbered context chunks below. Cite every chunk "
    "you use by its number in square brackets, such as [2]. If the chunks do not contain "
    "the answer, say that you do not know.\n\n"
)
_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class ApproximateTokens:
    def count(self, text: str) -> int:
        return max(math.ceil(len(text) / 4), len(_PIECE.findall(text)))


@dataclass(frozen=True, slots=True)
class Layout:
    chunks: list[Candidate]  # in prompt order
    prompt: str
    prefix_hash: str
    tokens_used: int


def source(chunk: Candidate) -> str:
    where = chunk.path or chunk.title or str(chunk.note_id)
    return f"{where} > {chunk.heading}" if chunk.heading else where


def block(number: int, chunk: Candidate) -> str:
    return f"[{number}] {source(chunk)}\n{chunk.text.strip()}\n\n"


def question_block(question: str) -> str:
    return f"Question: {question.strip()}\nAnswer:"


def cache_order(chunks: Sequence[Candidate], project: str | None) -> list[Candidate]:
    def key(c: Candidate) -> tuple[int, str, str, str, int]:
        if c.skill is not None:
            tier = 3
        elif c.project is None:
            tier = 2
        else:
            tier = 0 if c.project == project else 1
        return (tier, c.project or "", c.path or c.title, str(c.note_id), c.ordinal)

    return sorted({c.chunk_id: c for c in chunks}.values(), key=key)


def lay_out(
    ranked: Sequence[Candidate],
    question: str,
    project: str | None,
    budget: int,
    tokens: TokenCounter,
) -> Layout | None:
    """The prompt of the best chunks of ``ranked`` (best first) that fit ``budget``
    tokens with the instructions and the question, or None when not even those fit.
    Chunks that do not fit are marked ``over_budget``; a later, smaller one may fit."""
    fixed = tokens.count(INSTRUCTIONS) + tokens.count(question_block(question))
    if fixed > budget:
        return None
    chosen: list[Candidate] = []
    used = fixed
    for c in ranked:
        c.tokens = tokens.count(block(len(ranked), c))
        if used + c.tokens > budget:
            c.dropped = "over_budget"
            continue
        chosen.append(c)
        used += c.tokens
    while True:
        ordered = cache_order(chosen, project)
        prefix = INSTRUCTIONS + "".join(block(i, c) for i, c in enumerate(ordered, start=1))
        prompt = prefix + question_block(question)
        total = tokens.count(prompt)
        if total <= budget or not chosen:
            break
        last = chosen.pop()  # the estimate per block was short: drop the weakest
        last.dropped = "over_budget"
    return Layout(ordered, prompt, blake3.blake3(prefix.encode()).hexdigest(), total)
