"""The OpenAI-compatible adapter against a double over a real socket: the requests it
sends, the answers it reads, and the job failure class every kind of failure becomes."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import numpy as np
import pytest

from fortemi.inference import (
    Generation,
    InferenceRateLimited,
    InferenceRejected,
    InferenceTimeout,
    InferenceUnavailable,
    OpenAICompatibleBackend,
    outcome_for,
)
from fortemi.platform.jobs.models import FailureClass
from tests.support.ollama_double import double_vector
from tests.support.openai_double import OpenAIDouble

Operation = Callable[[OpenAICompatibleBackend, str], Awaitable[object]]


async def _embed(backend: OpenAICompatibleBackend, model: str) -> object:
    return await backend.embed(["a text"], model=model)


async def _generate(backend: OpenAICompatibleBackend, model: str) -> object:
    return await backend.generate("a prompt", model=model)


OPERATIONS = [pytest.param(_embed, id="embed"), pytest.param(_generate, id="generate")]


@pytest.fixture
async def backend(openai_double: OpenAIDouble) -> AsyncIterator[OpenAICompatibleBackend]:
    openai_double.requests.clear()
    openai_double.authorizations.clear()
    backend = OpenAICompatibleBackend(
        openai_double.url, api_key="sk-test-key", timeout_seconds=0.5, batch_size=3
    )
    yield backend
    await backend.aclose()


async def test_embed_puts_rows_back_in_input_order_by_index(
    backend: OpenAICompatibleBackend, openai_double: OpenAIDouble
) -> None:
    texts = ["alpha", "beta", "gamma", "delta"]
    vectors = await backend.embed(texts)
    expected = np.array([double_vector(text, 256) for text in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32
    assert vectors.shape == (4, 256)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    bodies = [body for path, body in openai_double.requests]
    assert [body["input"] for body in bodies] == [["alpha", "beta", "gamma"], ["delta"]]
    assert all(body["model"] == "text-embedding-3-small" for body in bodies)
    assert openai_double.paths() == ["/v1/embeddings", "/v1/embeddings"]


async def test_the_api_key_is_sent_as_a_bearer_token(
    backend: OpenAICompatibleBackend, openai_double: OpenAIDouble
) -> None:
    await backend.embed(["x"])
    assert openai_double.authorizations == ["Bearer sk-test-key"]


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_the_base_url_may_be_the_root_or_the_v1_root(
    openai_double: OpenAIDouble, suffix: str
) -> None:
    backend = OpenAICompatibleBackend(openai_double.url + suffix, api_key="sk-test-key")
    try:
        assert (await backend.embed(["x"])).shape == (1, 256)
    finally:
        await backend.aclose()


async def test_embedding_model_learns_the_dimension_and_knows_no_input_limit(
    backend: OpenAICompatibleBackend,
) -> None:
    model = await backend.embedding_model()
    assert (model.name, model.dimension, model.max_tokens) == ("text-embedding-3-small", 256, None)


async def test_generate_sends_system_and_user_messages_with_limits(
    backend: OpenAICompatibleBackend, openai_double: OpenAIDouble
) -> None:
    result = await backend.generate(
        "one two three", system="be brief", max_tokens=3, temperature=0.0, tier="standard"
    )
    assert result.model == "gpt-4o-mini"  # one configured model serves both tiers
    assert (result.text, result.finish_reason) == ("echo: be brief", "length")
    assert (result.prompt_tokens, result.completion_tokens) == (5, 3)
    ((path, body),) = openai_double.requests
    assert path == "/v1/chat/completions"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one two three"},
    ]
    assert (body["max_tokens"], body["temperature"], body["stream"]) == (3, 0.0, False)


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


async def test_generate_asks_for_structured_output_as_a_json_schema_response_format(
    backend: OpenAICompatibleBackend, openai_double: OpenAIDouble
) -> None:
    openai_double.replies["gpt-4o-mini"] = '{"answer": "blue"}'
    try:
        result = await backend.generate("why is the sky blue", json_schema=SCHEMA)
    finally:
        del openai_double.replies["gpt-4o-mini"]
    assert (result.text, result.refusal) == ('{"answer": "blue"}', None)
    ((_, body),) = openai_double.requests
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA},
    }


async def test_a_refusal_comes_back_as_refusal_with_empty_text(
    backend: OpenAICompatibleBackend, openai_double: OpenAIDouble
) -> None:
    openai_double.refusals["gpt-4o-mini"] = "I can't help with that."
    try:
        result = await backend.generate("why is the sky blue", json_schema=SCHEMA)
    finally:
        del openai_double.refusals["gpt-4o-mini"]
    assert (result.text, result.refusal) == ("", "I can't help with that.")


async def test_a_wrong_api_key_fails_for_good(openai_double: OpenAIDouble) -> None:
    backend = OpenAICompatibleBackend(openai_double.url, api_key="sk-wrong")
    try:
        with pytest.raises(InferenceRejected) as caught:
            await backend.embed(["x"])
    finally:
        await backend.aclose()
    assert caught.value.failure_code == "inference_unauthorized"
    assert "Incorrect API key provided" in caught.value.message
    assert "sk-wrong" not in caught.value.message


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_429_is_rate_limited_with_the_servers_retry_after(
    backend: OpenAICompatibleBackend, operation: Operation
) -> None:
    with pytest.raises(InferenceRateLimited) as caught:
        await operation(backend, "fail-rate-limit")
    outcome = outcome_for(caught.value)
    assert (outcome.kind, outcome.failure_class) == ("retry", FailureClass.RATE_LIMITED)
    assert outcome.retry_after_seconds == 7.0


@pytest.mark.parametrize(
    ("model", "error", "failure_class"),
    [
        ("fail-server", InferenceUnavailable, FailureClass.TRANSIENT),
        ("fail-busy", InferenceUnavailable, FailureClass.TRANSIENT),
        ("fail-slow", InferenceTimeout, FailureClass.TIMEOUT),
        ("fail-garbage", InferenceUnavailable, FailureClass.TRANSIENT),
    ],
)
@pytest.mark.parametrize("operation", OPERATIONS)
async def test_failures_worth_retrying_keep_their_class(
    backend: OpenAICompatibleBackend,
    operation: Operation,
    model: str,
    error: type[Exception],
    failure_class: FailureClass,
) -> None:
    with pytest.raises(error) as caught:
        await operation(backend, model)
    assert isinstance(caught.value, InferenceUnavailable | InferenceTimeout)
    outcome = outcome_for(caught.value)
    assert (outcome.kind, outcome.failure_class) == ("retry", failure_class)


@pytest.mark.parametrize(
    ("model", "code"),
    [("no-such-model", "inference_model_not_found"), ("fail-bad-request", "inference_bad_request")],
)
@pytest.mark.parametrize("operation", OPERATIONS)
async def test_requests_the_server_refuses_fail_for_good(
    backend: OpenAICompatibleBackend, operation: Operation, model: str, code: str
) -> None:
    with pytest.raises(InferenceRejected) as caught:
        await operation(backend, model)
    outcome = outcome_for(caught.value)
    assert (outcome.kind, outcome.failure_code) == ("failure", code)


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_refused_connection_is_transient(operation: Operation) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAICompatibleBackend(f"http://127.0.0.1:{port}", timeout_seconds=2.0)
    try:
        with pytest.raises(InferenceUnavailable) as caught:
            await operation(backend, "text-embedding-3-small")
    finally:
        await backend.aclose()
    assert caught.value.failure_code == "inference_unreachable"


async def test_generate_stream_reads_server_sent_events_and_the_usage_chunk(
    backend: OpenAICompatibleBackend, openai_double: OpenAIDouble
) -> None:
    items = [item async for item in backend.generate_stream("one two three", max_tokens=3)]
    *pieces, result = items
    assert pieces == ["echo: ", "one ", "two"]
    assert isinstance(result, Generation)
    assert (result.text, result.finish_reason, result.model) == (
        "echo: one two", "length", "gpt-4o-mini",
    )  # fmt: skip
    assert (result.prompt_tokens, result.completion_tokens) == (3, 3)
    ((_, body),) = openai_double.requests
    assert (body["stream"], body["stream_options"], body["max_tokens"]) == (
        True, {"include_usage": True}, 3,
    )  # fmt: skip


async def test_a_streamed_request_the_server_refuses_fails_before_any_piece(
    openai_double: OpenAIDouble,
) -> None:
    failing = OpenAICompatibleBackend(openai_double.url, generate_model="fail-server",
                                      api_key="sk-test-key")  # fmt: skip
    try:
        with pytest.raises(InferenceUnavailable):
            await anext(failing.generate_stream("a prompt"))  # fails before any piece
    finally:
        await failing.aclose()
