"""GET /metrics: Prometheus text with request, GraphQL, job, audit and policy figures."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from starlette.applications import Starlette

from fortemi.app import create_app
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall

pytestmark = pytest.mark.live


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def _scrape(live_server: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:
        response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return _samples(response.text)


def _value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_count_graphql_operations_by_name_and_errors_by_code(
    live_server: str, user_token: str, memory: str
) -> None:
    before = await _scrape(live_server)
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:
        headers = {"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory}
        for _ in range(2):
            ok = await http.post(
                "/graphql",
                json={
                    "query": "query MetricsProbe { me { sub } notes(first: 1) { edges { node { id } } } }"
                },
                headers=headers,
            )
            assert "errors" not in ok.json()
        missing = await http.post(
            "/graphql",
            json={
                "query": 'query MissingNote { note(id: "00000000-0000-0000-0000-000000000000") { id } noteVersions(id: "00000000-0000-0000-0000-000000000000") { version } }'
            },
            headers=headers,
        )
        assert "NOT_FOUND" in [e["extensions"]["code"] for e in missing.json()["errors"]]
        refused = await http.post("/graphql", json={"query": "{ me { sub } }"})
        assert refused.status_code == 401
    after = await _scrape(live_server)

    ops = "fortemi_graphql_operations_total"
    assert (
        _value(after, ops, operation="MetricsProbe", type="query", outcome="ok")
        - _value(before, ops, operation="MetricsProbe", type="query", outcome="ok")
        == 2
    )
    assert (
        _value(after, ops, operation="MissingNote", type="query", outcome="error")
        - _value(before, ops, operation="MissingNote", type="query", outcome="error")
        == 1
    )
    errors = "fortemi_graphql_errors_total"
    assert _value(after, errors, code="NOT_FOUND") > _value(before, errors, code="NOT_FOUND")
    http_total = "fortemi_http_requests_total"
    labels = {"route": "/graphql", "method": "POST", "status": "401"}
    assert _value(after, http_total, **labels) - _value(before, http_total, **labels) == 1
    latency = "fortemi_graphql_operation_duration_seconds_count"
    assert _value(after, latency, operation="MetricsProbe", type="query") >= 2
    # Every authorized operation wrote audit rows, and their commits were timed.
    assert _value(after, "fortemi_audit_write_seconds_count") > 0


async def test_metrics_show_pending_jobs_per_tier_from_the_database(
    live_server: str, gql: GraphQLCall, memory: str
) -> None:
    created = await gql('mutation { createNote(input: {title: "t", content: "c"}) { id } }')
    note_id = created["data"]["createNote"]["id"]
    await gql("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": note_id})
    before = await _scrape(live_server)
    job = await gql("mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }", {"ids": [note_id]})
    assert "errors" not in job, job
    after = await _scrape(live_server)
    # No worker runs in these tests: the job stays pending and is counted.
    pending = "fortemi_jobs"
    assert (
        _value(after, pending, tier="cpu", status="pending")
        == _value(before, pending, tier="cpu", status="pending") + 1
    )
    assert ("fortemi_embedding_backlog", frozenset()) in after


async def test_metrics_answer_only_loopback_or_the_configured_bearer_token(
    runtime: Runtime, app: Starlette
) -> None:
    # A client elsewhere on the network: not answered without the token.
    remote = httpx.ASGITransport(app=app, client=("203.0.113.7", 4242))
    async with httpx.AsyncClient(transport=remote, base_url="http://fortemi.test") as http:
        assert (await http.get("/metrics")).status_code == 404

    settings = runtime.settings.model_copy(update={"metrics_token": SecretStr("scrape-secret")})
    guarded = create_app(dataclasses.replace(runtime, settings=settings))
    local = httpx.ASGITransport(app=guarded, client=("127.0.0.1", 4242))
    async with httpx.AsyncClient(transport=local, base_url="http://fortemi.test") as http:
        assert (await http.get("/metrics")).status_code == 404
        wrong = {"Authorization": "Bearer scrape-secreT"}
        assert (await http.get("/metrics", headers=wrong)).status_code == 404
        right = {"Authorization": "Bearer scrape-secret"}
        response = await http.get("/metrics", headers=right)
    assert response.status_code == 200
    assert "fortemi_graphql_operations_total" in response.text
