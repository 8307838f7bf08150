"""The generation tiers: a model proposes concepts as JSON of a schema, which is checked.

The prompt gives the model the note (title and text, cut at ``max_input_chars``), the
labels of the memory's vocabulary that the note's words touch (so it reuses them instead
of coining synonyms), and what the tiers below already found. The answer is asked for as
structured output (the backend passes :data:`ANSWER_SCHEMA` as Ollama's ``format`` or
OpenAI's ``response_format``) and validated with :class:`Answer` all the same: servers
and models do not always honour a schema.

An answer that is not usable — a refusal, text that is not JSON, JSON that breaks the
schema — is "nothing found at this tier" (:class:`Reading` says which), never an error:
the job escalates or finishes on it. Failures of the call itself (timeouts, 5xx) are the
backend's :class:`~fortemi.inference.InferenceError`, which the job retries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from fortemi.graph.tagging.models import MAX_CONCEPTS, MAX_PATH, MIN_CONCEPTS, Found
from fortemi.graph.vocabulary.models import LabelEntry
from fortemi.inference import Generation, GenerationTier, InferenceBackend

__all__ = ["ANSWER_SCHEMA", "Answer", "GenerationTagger", "Reading", "prompt_for", "read_answer"]

Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Dimension = Literal["domain", "topic", "methodology", "application", "technique", "content_type"]


class Proposed(BaseModel):
    model_config = ConfigDict(extra="ignore")

    path: list[Label] = Field(min_length=1, max_length=MAX_PATH)
    dimension: Dimension
    confidence: float = Field(ge=0.0, le=1.0)
    relevance: float = Field(default=0.5, ge=0.0, le=1.0)
    primary: bool = False


class Answer(BaseModel):
    """What a generation tier must answer: ``{"concepts": [...]}``."""

    model_config = ConfigDict(extra="ignore")

    concepts: list[Proposed] = Field(max_length=2 * MAX_CONCEPTS)


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``$ref``s replaced by their ``$defs`` (Ollama turns a
    schema into a grammar and some versions do not follow references)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(dict(defs[ref.removeprefix("#/$defs/")]))
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    inlined: dict[str, Any] = walk(schema)
    return inlined


ANSWER_SCHEMA: Final = _inlined(Answer.model_json_schema())

SYSTEM: Final = (
    "You tag notes of a knowledge base with concepts from a SKOS vocabulary. Answer with "
    "JSON only, of the form "
    '{"concepts": [{"path": ["broader", "narrower"], "dimension": "...", '
    '"confidence": 0.0-1.0, "relevance": 0.0-1.0, "primary": false}]}. '
    f"Propose {MIN_CONCEPTS} to {MAX_CONCEPTS} concepts spread over the dimensions domain "
    "(field of knowledge), topic (subject), methodology (approach), application (use or "
    "industry), technique (specific method, tool or algorithm) and content_type (what kind "
    "of text the note is: tutorial, meeting notes, paper summary, ...). A path runs from "
    f"the broadest concept to the one that applies, at most {MAX_PATH} levels; labels are "
    "short noun phrases in the note's language. Reuse an existing label exactly when one "
    "fits. Mark the single concept the note is mostly about as primary."
)


def prompt_for(
    title: str, content: str, labels: Sequence[LabelEntry], prior: Sequence[Found], *, limit: int
) -> str:
    """The user prompt for a note: its text, vocabulary labels it touches, prior finds."""
    parts = [f"Title: {title.strip() or '(untitled)'}", "", "Text:", content[:limit].strip()]
    touched = _touched(labels, f"{title}\n{content[:limit]}")
    if touched:
        parts += ["", "Existing concepts (reuse these labels when they fit):"]
        parts += [f"- {' / '.join(path)}" for path in touched]
    if prior:
        parts += ["", "Already found by a simpler method (keep the good ones, fix or add):"]
        parts += [f"- {' / '.join(found.path)}" for found in prior]
    return "\n".join(parts)


_WORD = re.compile(r"\w+")
_MAX_LABELS = 80


def _touched(labels: Sequence[LabelEntry], text: str) -> list[tuple[str, ...]]:
    """Paths of concepts with a label sharing a word with the text, most words first."""
    words = {w.casefold() for w in _WORD.findall(text) if len(w) > 2}
    scored: dict[tuple[str, ...], int] = {}
    for entry in labels:
        overlap = len({w.casefold() for w in _WORD.findall(entry.label)} & words)
        path = entry.path or (entry.label,)
        if overlap and overlap > scored.get(path, 0):
            scored[path] = overlap
    return sorted(scored, key=lambda path: (-scored[path], path))[:_MAX_LABELS]


@dataclass(frozen=True, slots=True)
class Reading:
    """What an answer gave: the concepts, or why none (``refused``, ``malformed_json``,
    ``schema_violation``, ``truncated``)."""

    concepts: list[Found]
    problem: str | None = None


_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)
# How models decline in prose when they ignore the schema ("I'm sorry, but I can't ...").
_REFUSAL = re.compile(
    r"\b(?:sorry|apologi[sz]e|can(?:no|')t|unable to|not able to|won't|refuse)\b", re.I
)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def read_answer(generation: Generation, tier: str) -> Reading:
    """The concepts in ``generation``, validated; never raises."""
    if generation.refusal:
        return Reading([], "refused")
    text = _THINKING.sub("", generation.text).strip()  # reasoning models think aloud first
    if (fenced := _FENCE.match(text)) is not None:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError:
        if generation.finish_reason == "length":
            return Reading([], "truncated")
        return Reading([], "refused" if _REFUSAL.search(text[:300]) else "malformed_json")
    try:
        answer = Answer.model_validate(data)
    except ValidationError:
        return Reading([], "schema_violation")
    found: dict[str, Found] = {}
    for item in answer.concepts:
        # A model may write a path tag as one label ("ml/transformers").
        parts = [part.strip() for label in item.path for part in label.split("/")]
        path = tuple(part for part in parts if part)[-MAX_PATH:]
        if not path:
            continue
        candidate = Found(path, item.dimension, item.confidence, item.relevance, tier, item.primary)
        held = found.get(candidate.key)
        if held is None or candidate.confidence > held.confidence:
            found[candidate.key] = candidate
    ranked = sorted(found.values(), key=lambda f: (-f.confidence, -f.relevance, f.key))
    return Reading(ranked[:MAX_CONCEPTS])


class GenerationTagger:
    """Asks ``backend``'s model of one tier for a note's concepts.

    Raises only :class:`~fortemi.inference.InferenceError` (the call failed); an unusable
    answer is a :class:`Reading` with a problem.
    """

    def __init__(self, backend: InferenceBackend, *, max_input_chars: int) -> None:
        self._backend = backend
        self._limit = max_input_chars

    async def propose(
        self,
        tier: GenerationTier,
        title: str,
        content: str,
        labels: Sequence[LabelEntry],
        prior: Sequence[Found],
    ) -> Reading:
        generation = await self._backend.generate(
            prompt_for(title, content, labels, prior, limit=self._limit),
            tier=tier,
            system=SYSTEM,
            temperature=0.0,  # the same note should get the same concepts
            json_schema=ANSWER_SCHEMA,
        )
        return read_answer(generation, tier)
