"""The generation tiers against the Ollama-API double over a real socket (and one
refusal through the OpenAI-compatible double): structured output asked with the answer
schema, valid answers merged with what the lower tiers carried, and every unusable answer
(malformed JSON, a refusal, a schema violation) treated as nothing found at that tier,
while timeouts and server errors are classified retries."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest

from fortemi.graph.tagging.generation import ANSWER_SCHEMA
from fortemi.graph.tagging.related import RELATED_CONCEPT_INFERENCE
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.inference import OllamaBackend, OpenAICompatibleBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import FailureClass, Tier
from tests.integration.graph.tagging.conftest import FAST, STANDARD, make_job, run_handler
from tests.support.ollama_double import OllamaDouble
from tests.support.openai_double import OpenAIDouble

TITLE = "Reciprocal rank fusion for hybrid search"
CONTENT = "We fuse BM25 and dense retrieval rankings with RRF (k = 60) and tune k on a dev set."

CARRIED = {
    "origin": "00000000-0000-0000-0000-000000000001",
    "fromJob": "00000000-0000-0000-0000-000000000001",
    "fromTier": "cpu",
    "reason": "too_few_concepts",
    "path": ["cpu"],
    "carried": {
        "tier": "cpu",
        "concepts": [
            {"path": ["dev set"], "dimension": None, "confidence": 0.41, "relevance": 0.41,
             "tier": "cpu", "primary": True},
        ],
    },
}  # fmt: skip


def _answer(*concepts: tuple[list[str], str, float], primary: int = 0) -> str:
    return json.dumps(
        {
            "concepts": [
                {"path": path, "dimension": dim, "confidence": conf, "relevance": conf,
                 "primary": i == primary}
                for i, (path, dim, conf) in enumerate(concepts)
            ]
        }
    )  # fmt: skip


GOOD = _answer(
    (["information retrieval", "hybrid search"], "topic", 0.95),
    (["information retrieval"], "domain", 0.9),
    (["rank fusion", "reciprocal rank fusion"], "technique", 0.9),
    (["BM25"], "technique", 0.8),
    (["hyperparameter tuning"], "methodology", 0.6),
    (["technical note"], "content_type", 0.5),
)


async def _labels(vocabulary: VocabularyService, memory: str, note_id: UUID) -> dict[str, Any]:
    concepts = (await vocabulary.note_concepts(memory, [note_id])).get(note_id, [])
    return {c.label: c for c in concepts}


def _fast_job(memory: str, note_id: UUID) -> Any:
    return make_job(memory, note_id, Tier.FAST_GPU, {"escalation": CARRIED})


async def test_the_fast_tier_asks_for_the_schema_and_keeps_what_the_cpu_tier_carried(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
) -> None:
    ollama_double.replies[FAST] = GOOD
    note_id = await write(TITLE, CONTENT)
    run = await run_handler(db, vocabulary, ollama, _fast_job(memory, note_id))

    assert run.result["tier"] == "fast"
    assert run.result["reason"] == "enough_concepts"
    assert (run.result["found"], run.result["concepts"]) == (6, 7)
    assert run.escalations == []
    assert [s.type for s in run.enqueued] == [RELATED_CONCEPT_INFERENCE]
    [(_, body)] = [r for r in ollama_double.requests if r[0] == "/api/generate"]
    assert body["model"] == FAST
    assert body["format"] == ANSWER_SCHEMA
    assert "dev set" in body["prompt"]  # the prior tier's concepts are shown to the model
    labels = await _labels(vocabulary, memory, note_id)
    assert set(labels) == {
        "hybrid search", "information retrieval", "reciprocal rank fusion", "BM25",
        "hyperparameter tuning", "technical note", "dev set",
    }  # fmt: skip
    assert labels["reciprocal rank fusion"].dimension == "technique"
    # The model's primary wins over the CPU tier's.
    assert [name for name, c in labels.items() if c.primary] == ["hybrid search"]


async def test_the_prompt_lists_existing_concepts_the_note_touches(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
) -> None:
    other = await write("other", "other")
    await vocabulary.tag_note(
        memory,
        other,
        [
            ConceptProposal(("search", "dense retrieval"), "technique", 1.0, 1.0),
            ConceptProposal(("pottery",), "topic", 1.0, 1.0),
        ],
        source="api",
        actor="test",
    )
    ollama_double.replies[FAST] = GOOD
    note_id = await write(TITLE, CONTENT)
    await run_handler(db, vocabulary, ollama, _fast_job(memory, note_id))
    [(_, body)] = [r for r in ollama_double.requests if r[0] == "/api/generate"]
    assert "- search / dense retrieval" in body["prompt"]
    assert "pottery" not in body["prompt"]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        pytest.param('{"concepts": [{"path": ["rrf"], "dimension": "technique"', "malformed_json",
                     id="malformed-json"),
        pytest.param("I'm sorry, but I can't help with tagging this note.", "refused",
                     id="refusal-in-prose"),
        pytest.param(_answer((["rrf"], "vibes", 0.9)), "schema_violation",
                     id="unknown-dimension"),
        pytest.param('{"tags": ["rrf", "bm25"]}', "schema_violation", id="wrong-shape"),
        pytest.param(_answer((["rrf"], "technique", 1.7)), "schema_violation",
                     id="confidence-out-of-range"),
    ],
)  # fmt: skip
async def test_an_unusable_fast_answer_escalates_carrying_the_prior_concepts(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
    reply: str,
    problem: str,
) -> None:
    ollama_double.replies[FAST] = reply
    note_id = await write(TITLE, CONTENT)
    run = await run_handler(db, vocabulary, ollama, _fast_job(memory, note_id))

    assert run.result["problem"] == problem
    assert run.result["found"] == 0
    assert run.result["escalatedTier"] == "standard_gpu"
    [(reason, carry)] = run.escalations
    assert reason == "too_few_concepts"
    assert carry is not None
    assert carry["tier"] == "fast"
    assert [c["path"] for c in carry["concepts"]] == [["dev set"]]
    assert run.enqueued == []  # related inference waits for the end of the chain
    # What the chain has so far stays on the note meanwhile.
    assert set(await _labels(vocabulary, memory, note_id)) == {"dev set"}


async def test_a_fast_answer_with_too_few_concepts_escalates(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
) -> None:
    ollama_double.replies[FAST] = _answer((["rank fusion"], "technique", 0.9))
    note_id = await write(TITLE, CONTENT)
    run = await run_handler(db, vocabulary, ollama, _fast_job(memory, note_id))
    assert run.result["found"] == 1
    [(_, carry)] = run.escalations
    assert carry is not None
    assert sorted(c["path"][-1] for c in carry["concepts"]) == ["dev set", "rank fusion"]


async def test_the_standard_tier_finishes_the_chain_even_with_an_unusable_answer(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
) -> None:
    ollama_double.replies[STANDARD] = "```json\nnot json at all\n```"
    note_id = await write(TITLE, CONTENT)
    escalation = {**CARRIED, "fromTier": "fast_gpu", "path": ["cpu", "fast_gpu"]}
    job = make_job(memory, note_id, Tier.STANDARD_GPU, {"escalation": escalation})
    run = await run_handler(db, vocabulary, ollama, job)

    assert run.result["reason"] == "top_tier"
    assert run.result["problem"] == "malformed_json"
    assert run.escalations == []
    assert [s.type for s in run.enqueued] == [RELATED_CONCEPT_INFERENCE]
    assert set(await _labels(vocabulary, memory, note_id)) == {"dev set"}
    [(_, body)] = [r for r in ollama_double.requests if r[0] == "/api/generate"]
    assert body["model"] == STANDARD


async def test_a_reasoning_models_thinking_and_code_fence_are_read_past(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
) -> None:
    ollama_double.replies[FAST] = f"<think>fusion, retrieval...</think>\n```json\n{GOOD}\n```"
    note_id = await write(TITLE, CONTENT)
    run = await run_handler(db, vocabulary, ollama, _fast_job(memory, note_id))
    assert run.result["found"] == 6
    assert "problem" not in run.result


@pytest.mark.parametrize(
    ("model", "failure_class", "code"),
    [
        pytest.param("fail-slow", FailureClass.TIMEOUT, "inference_timeout", id="timeout"),
        pytest.param("fail-server", FailureClass.TRANSIENT, "inference_unavailable", id="5xx"),
        pytest.param("fail-busy", FailureClass.RATE_LIMITED, "inference_rate_limited", id="busy"),
    ],
)
async def test_a_failed_generation_call_is_a_classified_retry_that_writes_nothing(
    db: Database,
    vocabulary: VocabularyService,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
    model: str,
    failure_class: FailureClass,
    code: str,
) -> None:
    backend = OllamaBackend(ollama_double.url, fast_model=model, timeout_seconds=0.5)
    note_id = await write(TITLE, CONTENT)
    try:
        run = await run_handler(db, vocabulary, backend, _fast_job(memory, note_id))
    finally:
        await backend.aclose()

    assert run.outcome.kind == "retry"
    assert (run.outcome.failure_class, run.outcome.failure_code) == (failure_class, code)
    assert run.escalations == []
    assert run.enqueued == []
    assert await _labels(vocabulary, memory, note_id) == {}


async def test_an_openai_refusal_is_nothing_found_and_escalates(
    db: Database, vocabulary: VocabularyService, memory: str, write: Any
) -> None:
    with OpenAIDouble(api_key=None) as double:
        double.refusals["gpt-4o-mini"] = "I can't assist with that request."
        backend = OpenAICompatibleBackend(double.url)
        note_id = await write(TITLE, CONTENT)
        try:
            run = await run_handler(db, vocabulary, backend, _fast_job(memory, note_id))
        finally:
            await backend.aclose()
        [(_, body)] = [r for r in double.requests if r[0] == "/v1/chat/completions"]

    assert run.result["problem"] == "refused"
    assert len(run.escalations) == 1
    assert body["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA


async def test_a_label_the_vocabulary_would_refuse_is_dropped_not_fatal(
    db: Database,
    vocabulary: VocabularyService,
    ollama: OllamaBackend,
    ollama_double: OllamaDouble,
    memory: str,
    write: Any,
) -> None:
    ollama_double.replies[FAST] = _answer(
        (["rank\u0000fusion"], "technique", 0.9),
        (["information retrieval"], "domain", 0.8),
        (["BM25"], "technique", 0.7),
        (["evaluation"], "methodology", 0.6),
    )
    note_id = await write(TITLE, CONTENT)
    run = await run_handler(db, vocabulary, ollama, _fast_job(memory, note_id))
    assert run.result["reason"] == "enough_concepts"
    assert set(await _labels(vocabulary, memory, note_id)) == {
        "information retrieval", "BM25", "evaluation", "dev set",
    }  # fmt: skip
