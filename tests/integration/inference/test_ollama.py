"""The Ollama adapter against an Ollama-API double over a real socket: what it sends,
what it returns, and which job failure class every kind of failure becomes."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import numpy as np
import pytest

from fortemi.inference import (
    Generation,
    InferenceError,
    InferenceRateLimited,
    InferenceRejected,
    InferenceTimeout,
    InferenceUnavailable,
    OllamaBackend,
    outcome_for,
)
from fortemi.platform.jobs.models import FailureClass
from tests.support.ollama_double import OllamaDouble, double_vector

Operation = Callable[[OllamaBackend, str], Awaitable[object]]


async def _embed(backend: OllamaBackend, model: str) -> object:
    return await backend.embed(["a text"], model=model)


async def _generate(backend: OllamaBackend, model: str) -> object:
    return await backend.generate("a prompt", model=model)


OPERATIONS = [pytest.param(_embed, id="embed"), pytest.param(_generate, id="generate")]


@pytest.fixture
async def backend(ollama_double: OllamaDouble) -> AsyncIterator[OllamaBackend]:
    ollama_double.requests.clear()
    backend = OllamaBackend(ollama_double.url, timeout_seconds=0.5, batch_size=2)
    yield backend
    await backend.aclose()


def _expected(texts: list[str], dimension: int = 768) -> np.ndarray:
    vectors: np.ndarray = np.array([double_vector(text, dimension) for text in texts])
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


async def test_embed_returns_unit_float32_rows_in_input_order(backend: OllamaBackend) -> None:
    texts = ["first", "second", "third", "fourth", "fifth"]
    vectors = await backend.embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (5, 768)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)


async def test_embed_sends_batches_of_the_configured_size_with_truncation(
    backend: OllamaBackend, ollama_double: OllamaDouble
) -> None:
    await backend.embed(["a", "b", "c", "d", "e"])
    bodies = [body for path, body in ollama_double.requests if path == "/api/embed"]
    assert [body["input"] for body in bodies] == [["a", "b"], ["c", "d"], ["e"]]
    assert all(body["model"] == "nomic-embed-text" and body["truncate"] for body in bodies)


async def test_embedding_model_reports_the_servers_dimension_and_context(
    backend: OllamaBackend, ollama_double: OllamaDouble
) -> None:
    model = await backend.embedding_model()
    assert (model.name, model.dimension, model.max_tokens) == ("nomic-embed-text", 768, 2048)
    assert await backend.embedding_model() is model  # asked once, then remembered
    assert ollama_double.paths() == ["/api/embed", "/api/show"]


async def test_no_texts_give_no_rows_of_the_models_dimension(backend: OllamaBackend) -> None:
    assert (await backend.embed([])).shape == (0, 768)


async def test_a_model_that_changes_dimension_is_refused_not_mixed(
    ollama_double: OllamaDouble,
) -> None:
    ollama_double.dimensions["shifting-embedder"] = 384
    backend = OllamaBackend(ollama_double.url, embed_model="shifting-embedder")
    try:
        assert (await backend.embed(["x"])).shape == (1, 384)
        ollama_double.dimensions["shifting-embedder"] = 512
        with pytest.raises(InferenceRejected) as caught:
            await backend.embed(["x"])
        assert caught.value.failure_code == "inference_dimension_changed"
    finally:
        del ollama_double.dimensions["shifting-embedder"]
        await backend.aclose()


@pytest.mark.parametrize(("tier", "model"), [("fast", "qwen3.5:9b"), ("standard", "qwen3.5:27b")])
async def test_generate_uses_the_tiers_model(
    backend: OllamaBackend, ollama_double: OllamaDouble, tier: str, model: str
) -> None:
    result = await backend.generate("why is the sky blue", tier=tier)  # type: ignore[arg-type]
    assert result.model == model
    assert result.text == "echo: why is the sky blue"
    assert result.finish_reason == "stop"
    assert result.completion_tokens == 6
    ((path, body),) = ollama_double.requests
    assert path == "/api/generate"
    assert body["model"] == model
    assert body["stream"] is False
    assert "system" not in body
    assert "options" not in body


async def test_generate_passes_system_prompt_token_limit_and_temperature(
    backend: OllamaBackend, ollama_double: OllamaDouble
) -> None:
    result = await backend.generate(
        "one two three four", system="be brief", max_tokens=2, temperature=0.2
    )
    assert (result.text, result.finish_reason) == ("echo: one", "length")
    ((_, body),) = ollama_double.requests
    assert body["system"] == "be brief"
    assert body["options"] == {"num_predict": 2, "temperature": 0.2}


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


async def test_generate_asks_for_structured_output_with_the_schema_as_format(
    backend: OllamaBackend, ollama_double: OllamaDouble
) -> None:
    ollama_double.replies["qwen3.5:9b"] = '{"answer": "blue"}'
    try:
        result = await backend.generate("why is the sky blue", json_schema=SCHEMA)
    finally:
        del ollama_double.replies["qwen3.5:9b"]
    assert result.text == '{"answer": "blue"}'
    assert result.refusal is None
    ((_, body),) = ollama_double.requests
    assert body["format"] == SCHEMA


async def test_generate_without_a_schema_sends_no_format(
    backend: OllamaBackend, ollama_double: OllamaDouble
) -> None:
    await backend.generate("why is the sky blue")
    ((_, body),) = ollama_double.requests
    assert "format" not in body


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_429_is_rate_limited_with_the_servers_retry_after(
    backend: OllamaBackend, operation: Operation
) -> None:
    with pytest.raises(InferenceRateLimited) as caught:
        await operation(backend, "fail-rate-limit")
    assert caught.value.retry_after_seconds == 7.0
    outcome = outcome_for(caught.value)
    assert (outcome.kind, outcome.failure_class) == ("retry", FailureClass.RATE_LIMITED)
    assert outcome.retry_after_seconds == 7.0


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_busy_server_is_rate_limited(backend: OllamaBackend, operation: Operation) -> None:
    with pytest.raises(InferenceRateLimited) as caught:
        await operation(backend, "fail-busy")
    assert caught.value.status == 503


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_server_error_is_transient(backend: OllamaBackend, operation: Operation) -> None:
    with pytest.raises(InferenceUnavailable) as caught:
        await operation(backend, "fail-server")
    assert "llama runner process has terminated" in caught.value.message
    outcome = outcome_for(caught.value)
    assert (outcome.kind, outcome.failure_class) == ("retry", FailureClass.TRANSIENT)


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_an_unknown_model_fails_for_good(
    backend: OllamaBackend, operation: Operation
) -> None:
    with pytest.raises(InferenceRejected) as caught:
        await operation(backend, "no-such-model")
    assert caught.value.failure_code == "inference_model_not_found"
    assert "no-such-model" in caught.value.message
    outcome = outcome_for(caught.value)
    assert (outcome.kind, outcome.failure_class) == ("failure", FailureClass.PERMANENT)
    assert outcome.failure_code == "inference_model_not_found"


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_bad_request_fails_for_good(backend: OllamaBackend, operation: Operation) -> None:
    with pytest.raises(InferenceRejected) as caught:
        await operation(backend, "fail-bad-request")
    assert caught.value.failure_code == "inference_bad_request"


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_no_answer_within_the_timeout_is_a_timeout(
    backend: OllamaBackend, operation: Operation
) -> None:
    with pytest.raises(InferenceTimeout) as caught:
        await operation(backend, "fail-slow")
    assert outcome_for(caught.value).failure_class is FailureClass.TIMEOUT


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_malformed_answer_is_transient(
    backend: OllamaBackend, operation: Operation
) -> None:
    with pytest.raises(InferenceUnavailable) as caught:
        await operation(backend, "fail-garbage")
    assert caught.value.failure_code == "inference_bad_response"


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_refused_connection_is_transient(operation: Operation) -> None:
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OllamaBackend(f"127.0.0.1:{port}", timeout_seconds=2.0)
    try:
        with pytest.raises(InferenceUnavailable) as caught:
            await operation(backend, "nomic-embed-text")
    finally:
        await backend.aclose()
    assert caught.value.failure_code == "inference_unreachable"
    assert str(port) not in caught.value.message  # the address is the operator's, not the caller's


async def test_errors_are_fortemi_errors_with_stable_codes(backend: OllamaBackend) -> None:
    with pytest.raises(InferenceError) as caught:
        await backend.embed(["x"], model="fail-rate-limit")
    assert caught.value.code == "RATE_LIMITED"
    assert caught.value.extensions == {"backend": "ollama", "retryAfterSeconds": 7.0}


async def test_generate_stream_reads_ndjson_pieces_then_the_counts(
    backend: OllamaBackend, ollama_double: OllamaDouble
) -> None:
    items = [item async for item in backend.generate_stream("one two three", max_tokens=3)]
    *pieces, result = items
    assert pieces == ["echo: ", "one ", "two"]
    assert isinstance(result, Generation)
    assert (result.text, result.finish_reason, result.model) == (
        "echo: one two", "length", "qwen3.5:9b",
    )  # fmt: skip
    assert (result.prompt_tokens, result.completion_tokens) == (6, 3)  # prompt_eval_count
    ((_, body),) = [r for r in ollama_double.requests if r[0] == "/api/generate"]
    assert (body["stream"], body["options"]["num_predict"]) == (True, 3)


async def test_a_streamed_request_ollama_refuses_is_the_same_error_as_unstreamed(
    ollama_double: OllamaDouble,
) -> None:
    failing = OllamaBackend(ollama_double.url, fast_model="fail-server")
    try:
        with pytest.raises(InferenceUnavailable, match="llama runner process has terminated"):
            await anext(failing.generate_stream("a prompt"))  # fails before any piece
    finally:
        await failing.aclose()
