"""ask and askStream over the homelab vault, answered by the Ollama-API double over a
real socket: citations kept and dropped, the second call only for an empty or cut-off
answer, no call when the plan abstains, degraded without a generation backend, backend
failures as SERVICE_UNAVAILABLE, the server's evaluated tokens, and the stream's order."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.inference import OllamaBackend
from fortemi.runtime import Runtime, answer_settings
from fortemi.wiki.answers.service import AnswerService, AnswerSettings
from tests.integration.graphql.conftest import OPEN_POLICY, error_codes
from tests.support.graphql_ws import next_of
from tests.support.graphql_ws import socket as ws_socket
from tests.support.homelab import questions
from tests.support.live import serve
from tests.support.ollama_double import OllamaDouble

PLAN = """plan { chunks { note { path } heading } abstained reason prompt prefixHash
               tokensUsed degraded }"""
ASK = f"""query($input: AskInput!) {{
  ask(input: $input) {{
    answer citations {{ number note {{ id path }} path heading }} droppedCitations
    {PLAN} llmCalls model degraded degradedReason reason finishReason tookMs
    promptTokens tokensEvaluated prefixHash
  }}
}}"""
STREAM = f"""subscription($input: AskInput!) {{
  askStream(input: $input) {{
    kind token retry {PLAN}
    answer {{ answer citations {{ number path heading }} droppedCitations llmCalls model
              tokensEvaluated prefixHash }}
  }}
}}"""
OWNERSHIP = {"question": "Who has ownership of the `logging` namespace?", "project": "poimen"}


@pytest.fixture(scope="module")
def ollama() -> Iterator[OllamaDouble]:
    with OllamaDouble() as double:
        double.slow_seconds = 5.0
        yield double


@pytest.fixture
def charlie(issuer: LocalIssuer) -> str:
    return issuer.mint(f"charlie-{uuid.uuid4().hex[:8]}", groups=["platform-team", "devops-team"],
                       roles=["viewer"], permissions=["memory:read", "skill:read"])  # fmt: skip


def _variant(runtime: Runtime, backend: Any, settings: AnswerSettings | None = None) -> Runtime:
    answers = AnswerService(runtime.services.retrieve, backend, settings)
    return dataclasses.replace(
        runtime, services=dataclasses.replace(runtime.services, answers=answers)
    )


def _model(ollama: OllamaDouble) -> str:
    """A generation model of its own, so scripts and prefix caches of tests never meet."""
    name = f"answerer-{uuid.uuid4().hex[:8]}"
    ollama.generators.add(name)
    return name


_opened: list[OllamaBackend] = []


@pytest.fixture(autouse=True)
async def _close_backends() -> AsyncIterator[None]:
    yield
    while _opened:
        await _opened.pop().aclose()


def _backend(url: str, model: str, **kwargs: Any) -> OllamaBackend:
    backend = OllamaBackend(url, fast_model=model, standard_model=f"{model}-big", **kwargs)
    _opened.append(backend)
    return backend


async def _ask(
    runtime: Runtime, backend: Any, memory: str, token: str, **fields: Any
) -> dict[str, Any]:
    return await _ask_with(_variant(runtime, backend), memory, token, **fields)


async def _ask_with(runtime: Runtime, memory: str, token: str, **fields: Any) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        response = await client.post(
            "/graphql",
            json={"query": ASK, "variables": {"input": fields}},
            headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
        )
    body: dict[str, Any] = response.json()
    return body


async def _answer(
    runtime: Runtime, backend: Any, memory: str, token: str, **fields: Any
) -> dict[str, Any]:
    body = await _ask(runtime, backend, memory, token, **fields)
    assert "errors" not in body, body
    answer: dict[str, Any] = body["data"]["ask"]
    return answer


def _generations(ollama: OllamaDouble, model: str) -> list[dict[str, Any]]:
    return [b for path, b in ollama.requests if path == "/api/generate" and b["model"] == model]


async def test_an_answer_cites_selected_chunks_and_drops_numbers_naming_none(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("The platform team owns it [1]; see [1, 99] and [0].", "stop")]
    answer = await _answer(runtime, _backend(ollama.url, model), homelab, charlie, **OWNERSHIP)
    first = answer["plan"]["chunks"][0]
    assert answer["answer"] == "The platform team owns it [1]; see [1, 99] and [0]."
    assert [(c["number"], c["path"], c["heading"]) for c in answer["citations"]] == [
        (1, first["note"]["path"], first["heading"])
    ]
    assert answer["citations"][0]["note"]["path"] == first["note"]["path"]
    assert answer["droppedCitations"] == 2  # 99 and 0 name no selected chunk
    assert (answer["llmCalls"], answer["model"], answer["degraded"]) == (1, model, False)
    assert (answer["reason"], answer["finishReason"]) == (None, "stop")
    assert answer["prefixHash"] == answer["plan"]["prefixHash"] is not None
    assert answer["promptTokens"] == answer["plan"]["tokensUsed"]
    (sent,) = _generations(ollama, model)
    assert sent["prompt"] == answer["plan"]["prompt"]
    assert "cite" in sent["prompt"].lower()
    assert "[2]" in sent["prompt"]
    assert sent["options"]["num_predict"] == 1024


async def test_the_doubles_extractive_reader_cites_the_chunk_that_answers(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.extractive.add(model)
    answer = await _answer(runtime, _backend(ollama.url, model), homelab, charlie, **OWNERSHIP)
    chunks = answer["plan"]["chunks"]
    cited = [chunks[c["number"] - 1] for c in answer["citations"]]
    assert ("projects/poimen/memories/ownership.md", "Namespaces by team") in {
        (c["note"]["path"], c["heading"].split(" > ")[-1]) for c in cited
    }
    assert answer["droppedCitations"] == 0
    assert 0 < len(cited) < len(chunks)  # it cites what shares the question's words only


async def test_an_empty_first_answer_is_asked_again_once(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("  ", "stop"), ("The platform team [1].", "stop")]
    answer = await _answer(runtime, _backend(ollama.url, model), homelab, charlie, **OWNERSHIP)
    assert (answer["answer"], answer["llmCalls"]) == ("The platform team [1].", 2)
    assert [c["number"] for c in answer["citations"]] == [1]
    assert len(_generations(ollama, model)) == 2


async def test_an_answer_cut_off_by_length_is_asked_again_with_more_room(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("The platform", "length"), ("The platform team [1].", "stop")]
    answer = await _answer(runtime, _backend(ollama.url, model), homelab, charlie, **OWNERSHIP)
    assert (answer["answer"], answer["llmCalls"], answer["reason"]) == (
        "The platform team [1].", 2, None,
    )  # fmt: skip
    first, second = _generations(ollama, model)
    assert first["prompt"] == second["prompt"]
    assert (first["options"]["num_predict"], second["options"]["num_predict"]) == (1024, 4096)


async def test_a_second_cut_off_answer_is_returned_as_truncated_without_a_third_call(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("The", "length"), ("The platform [1]", "length"), ("x", "stop")]
    answer = await _answer(runtime, _backend(ollama.url, model), homelab, charlie, **OWNERSHIP)
    assert (answer["answer"], answer["llmCalls"]) == ("The platform [1]", 2)
    assert (answer["reason"], answer["finishReason"]) == ("answer_truncated", "length")
    assert len(_generations(ollama, model)) == 2


async def test_the_answer_settings_set_the_calls_token_limits_and_temperature(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("The platform", "length"), ("The platform team [1].", "stop")]
    limits = {"answer_max_tokens": 64, "answer_retry_max_tokens": 512, "answer_temperature": 0.25}
    settings = answer_settings(runtime.settings.model_copy(update=limits))
    variant = _variant(runtime, _backend(ollama.url, model), settings)
    body = await _ask_with(variant, homelab, charlie, **OWNERSHIP)
    assert "errors" not in body, body
    first, second = _generations(ollama, model)
    assert (first["options"]["num_predict"], second["options"]["num_predict"]) == (64, 512)
    assert first["options"]["temperature"] == second["options"]["temperature"] == 0.25


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _metrics(runtime: Runtime) -> Samples:
    """GET /metrics of the app, from loopback (what a scraper on the host reads)."""
    transport = httpx.ASGITransport(app=create_app(runtime), client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _sample(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_model_calls_are_counted_with_their_duration_and_tokens_in_the_metrics(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("The platform", "length"), ("The platform team [1].", "stop")]
    answer = await _answer(runtime, _backend(ollama.url, model), homelab, charlie, **OWNERSHIP)
    seen = await _metrics(runtime)

    fast = {"tier": "fast", "model": model}
    for outcome in ("length", "stop"):
        assert _sample(seen, "fortemi_generation_calls_total", **fast, outcome=outcome) == 1
        duration = "fortemi_generation_call_duration_seconds_count"
        assert _sample(seen, duration, **fast, outcome=outcome) == 1
    tokens = "fortemi_generation_tokens_total"
    # Both calls sent the same prompt; the double evaluates its words + 3 each time and
    # answers with one token a word.
    assert _sample(seen, tokens, **fast, kind="prompt") == 2 * answer["promptTokens"]
    assert _sample(seen, tokens, **fast, kind="evaluated") == answer["tokensEvaluated"]
    assert _sample(seen, tokens, **fast, kind="evaluated") == 2 * (
        len(answer["plan"]["prompt"].split()) + 3
    )
    assert _sample(seen, tokens, **fast, kind="answer") == len("The platform".split()) + len(
        "The platform team [1].".split()
    )


async def test_a_failed_model_call_is_counted_as_an_error_of_its_model(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    before = await _metrics(runtime)
    failing = await _ask(runtime, _backend(ollama.url, "fail-server"), homelab, charlie,
                         **OWNERSHIP)  # fmt: skip
    after = await _metrics(runtime)

    assert error_codes(failing) == ["SERVICE_UNAVAILABLE"]
    labels = {"tier": "fast", "model": "fail-server", "outcome": "error"}
    calls = "fortemi_generation_calls_total"
    assert _sample(after, calls, **labels) == _sample(before, calls, **labels) + 1
    assert _sample(after, "fortemi_generation_tokens_total", tier="fast", model="fail-server",
                   kind="answer") == 0  # fmt: skip


async def test_an_abstained_plan_calls_no_model_and_answers_null(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    unanswerable = next(q for q in questions() if q.note is None)
    answer = await _answer(
        runtime, _backend(ollama.url, model), homelab, charlie,
        question=unanswerable.question, project=unanswerable.project,
    )  # fmt: skip
    assert answer["plan"]["abstained"]
    assert (answer["answer"], answer["reason"], answer["llmCalls"]) == (
        None, "no_relevant_context", 0,
    )  # fmt: skip
    assert (answer["degraded"], answer["citations"]) == (False, [])
    assert _generations(ollama, model) == []


async def test_without_a_generation_backend_the_answer_is_degraded_with_its_plan(
    runtime: Runtime, homelab: str, charlie: str
) -> None:
    assert not runtime.backend.can_generate  # the embedded default only embeds
    answer = await _answer(runtime, runtime.backend, homelab, charlie, **OWNERSHIP)
    assert (answer["degraded"], answer["degradedReason"], answer["reason"]) == (
        True, "generation_unavailable", "generation_unavailable",
    )  # fmt: skip
    assert answer["answer"] is None
    assert answer["llmCalls"] == 0
    assert answer["plan"]["chunks"]
    assert not answer["plan"]["abstained"]
    assert answer["plan"]["prompt"] is not None


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


async def test_a_backend_that_is_down_or_too_slow_is_service_unavailable(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    down = await _ask(runtime, _backend(_closed_port(), "any"), homelab, charlie, **OWNERSHIP)
    assert error_codes(down) == ["SERVICE_UNAVAILABLE"]
    assert "refused or dropped the connection" in down["errors"][0]["message"]
    slow = _backend(ollama.url, "fail-slow", timeout_seconds=0.5)
    late = await _ask(runtime, slow, homelab, charlie, **OWNERSHIP)
    assert error_codes(late) == ["SERVICE_UNAVAILABLE"]
    assert "did not answer in time" in late["errors"][0]["message"]
    failing = await _ask(runtime, _backend(ollama.url, "fail-server"), homelab, charlie,
                         **OWNERSHIP)  # fmt: skip
    assert error_codes(failing) == ["SERVICE_UNAVAILABLE"]


async def test_tokens_evaluated_come_from_prompt_eval_count_and_drop_on_a_prefix_cache_hit(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.prefix_cache = True
    try:
        backend = _backend(ollama.url, model)
        cold = await _answer(runtime, backend, homelab, charlie, **OWNERSHIP)
        warm = await _answer(runtime, backend, homelab, charlie, **OWNERSHIP)
    finally:
        ollama.prefix_cache = False
    words = len(cold["plan"]["prompt"].split())
    assert cold["tokensEvaluated"] == words + 3  # the double's prompt_eval_count
    assert warm["prefixHash"] == cold["prefixHash"]
    assert warm["tokensEvaluated"] == 3 < warm["promptTokens"]  # all but the double's 3


async def test_ask_stream_sends_the_plan_then_tokens_then_the_cited_answer(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    text = "The platform team owns the logging namespace [1] and [9999]."
    ollama.scripts[model] = [("", "stop"), (text, "stop")]
    app = create_app(_variant(runtime, _backend(ollama.url, model)))
    messages: list[dict[str, Any]] = []
    async with serve(app) as server, ws_socket(server, charlie, homelab) as ws:
        await ws.send(json.dumps({"id": "a", "type": "subscribe",
                                  "payload": {"query": STREAM,
                                              "variables": {"input": OWNERSHIP}}}))  # fmt: skip
        while (message := await next_of(ws, "a"))["type"] == "next":
            assert "errors" not in message["payload"], message
            messages.append(message["payload"]["data"]["askStream"])
    assert message["type"] == "complete"
    kinds = [m["kind"] for m in messages]
    assert kinds[0] == "PLAN"
    assert kinds[1] == "RETRY"
    assert kinds[-1] == "ANSWER"
    assert set(kinds[2:-1]) == {"TOKEN"}
    assert len(kinds[2:-1]) == len(text.split())
    assert messages[1]["retry"] == "empty"
    assert "".join(m["token"] for m in messages[2:-1]) == text
    plan, answer = messages[0]["plan"], messages[-1]["answer"]
    assert plan["chunks"]
    assert answer["answer"] == text
    assert [c["path"] for c in answer["citations"]] == [plan["chunks"][0]["note"]["path"]]
    assert (answer["droppedCitations"], answer["llmCalls"], answer["model"]) == (1, 2, model)
    assert answer["prefixHash"] == plan["prefixHash"]
    assert all(b["stream"] is True for b in _generations(ollama, model))


async def _stream(
    runtime: Runtime, backend: Any, memory: str, token: str, **fields: Any
) -> list[dict[str, Any]]:
    """Every message of one askStream operation, to its complete or error."""
    app = create_app(_variant(runtime, backend))
    messages: list[dict[str, Any]] = []
    async with serve(app) as server, ws_socket(server, token, memory) as ws:
        await ws.send(json.dumps({"id": "a", "type": "subscribe",
                                  "payload": {"query": STREAM,
                                              "variables": {"input": fields}}}))  # fmt: skip
        while True:
            message = await next_of(ws, "a")
            messages.append(message)
            if message["type"] != "next" or "errors" in message["payload"]:
                return messages


async def test_ask_stream_refuses_a_forbidden_project_before_planning_or_calling(
    runtime: Runtime, homelab: str, issuer: LocalIssuer, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    alice = issuer.mint(f"alice-{uuid.uuid4().hex[:8]}", groups=["data-team"],
                        roles=["viewer"], permissions=["memory:read"])  # fmt: skip
    (message,) = await _stream(runtime, _backend(ollama.url, model), homelab, alice, **OWNERSHIP)
    errors = message["payload"] if message["type"] == "error" else message["payload"]["errors"]
    assert [e["extensions"]["code"] for e in errors] == ["FORBIDDEN"]
    assert _generations(ollama, model) == []


async def test_ask_stream_sends_the_plan_before_a_backend_failure(
    runtime: Runtime, homelab: str, charlie: str
) -> None:
    backend = _backend(_closed_port(), "any")
    plan, failure = await _stream(runtime, backend, homelab, charlie, **OWNERSHIP)
    assert plan["payload"]["data"]["askStream"]["kind"] == "PLAN"
    assert plan["payload"]["data"]["askStream"]["plan"]["chunks"]
    errors = failure["payload"] if failure["type"] == "error" else failure["payload"]["errors"]
    assert [e["extensions"]["code"] for e in errors] == ["SERVICE_UNAVAILABLE"]


async def test_ask_stream_without_a_backend_sends_the_plan_then_a_degraded_answer(
    runtime: Runtime, homelab: str, charlie: str
) -> None:
    *messages, end = await _stream(runtime, runtime.backend, homelab, charlie, **OWNERSHIP)
    assert end["type"] == "complete"
    kinds = [m["payload"]["data"]["askStream"]["kind"] for m in messages]
    assert kinds == ["PLAN", "ANSWER"]
    answer = messages[1]["payload"]["data"]["askStream"]["answer"]
    assert (answer["answer"], answer["llmCalls"]) == (None, 0)


async def test_ask_stream_ends_forbidden_when_the_project_is_closed_mid_answer(
    runtime: Runtime, homelab: str, charlie: str, ollama: OllamaDouble
) -> None:
    model = _model(ollama)
    ollama.scripts[model] = [("Use Arc with a Mutex [1] for shared state.", "stop")]
    app = create_app(_variant(runtime, _backend(ollama.url, model)))
    question = {"question": "How do I share ownership of a value between threads?",
                "project": "rust-guide"}  # fmt: skip
    closed = {**OPEN_POLICY, "project": "rust-guide", "access_level": "group",
              "allowed_groups": ["nobody-team"]}  # fmt: skip
    ollama.hold_streams = True
    try:
        async with serve(app) as server, ws_socket(server, charlie, homelab) as ws:
            await ws.send(json.dumps({"id": "a", "type": "subscribe",
                                      "payload": {"query": STREAM,
                                                  "variables": {"input": question}}}))  # fmt: skip
            plan = await next_of(ws, "a")
            first = await next_of(ws, "a")
            assert plan["payload"]["data"]["askStream"]["kind"] == "PLAN"
            assert first["payload"]["data"]["askStream"]["token"] == "Use "
            await runtime.policies.put("project", homelab, "rust-guide", closed, actor="test")
            ollama.hold_streams = False
            end = await next_of(ws, "a")
    finally:
        ollama.hold_streams = False
        await runtime.policies.put(
            "project", homelab, "rust-guide", {**OPEN_POLICY, "project": "rust-guide"},
            actor="test",
        )  # fmt: skip
    errors = end["payload"] if end["type"] == "error" else end["payload"]["errors"]
    assert [e["extensions"]["code"] for e in errors] == ["FORBIDDEN"]


FORTEMI = str(Path(sys.executable).parent / "fortemi")


async def _fortemi_ask(live_server: str, token: str, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.update(FORTEMI_URL=f"http://{live_server}", FORTEMI_TOKEN=token)
    process = await asyncio.create_subprocess_exec(
        FORTEMI, "ask", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.live
async def test_fortemi_ask_prints_the_reason_and_the_plans_sources_without_a_backend(
    live_server: str, homelab: str, charlie: str
) -> None:
    code, out, err = await _fortemi_ask(
        live_server, charlie, "--memory", homelab, "--project", "poimen", "--tier", "standard",
        OWNERSHIP["question"],
    )  # fmt: skip
    assert code == 3, out + err
    assert out.startswith("no answer: generation_unavailable\n")
    assert "set OLLAMA_HOST" in out
    assert "  [1] " in out
    assert "projects/poimen/memories/ownership.md" in out
    unanswerable = next(q for q in questions() if q.note is None)
    code, out, _ = await _fortemi_ask(
        live_server, charlie, "--memory", homelab, "--project", str(unanswerable.project),
        unanswerable.question,
    )  # fmt: skip
    assert code == 3
    assert out.startswith("no answer: no_relevant_context (")


@pytest.mark.live
async def test_fortemi_ask_reports_a_forbidden_project_in_one_line(
    live_server: str, homelab: str, issuer: LocalIssuer
) -> None:
    alice = issuer.mint(f"alice-{uuid.uuid4().hex[:8]}", groups=["data-team"],
                        roles=["viewer"], permissions=["memory:read"])  # fmt: skip
    code, out, err = await _fortemi_ask(
        live_server, alice, "--memory", homelab, "--project", "poimen", OWNERSHIP["question"]
    )
    assert code == 1
    assert out == ""
    assert err.startswith("fortemi ask: ")
    assert "(FORBIDDEN)" in err
    assert "Traceback" not in err
