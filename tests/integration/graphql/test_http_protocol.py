"""GraphQL over HTTP: media types, status codes, and JSON error bodies for every refusal."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.graphql.conftest import error_codes

GRAPHQL_RESPONSE = "application/graphql-response+json"
AUDIT_DIR = Path(__file__).resolve().parents[2] / "http-audit"


def _headers(token: str, accept: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if accept is not None:
        headers["Accept"] = accept
    return headers


async def _post(
    client: httpx.AsyncClient, token: str, body: Any, accept: str | None = GRAPHQL_RESPONSE
) -> httpx.Response:
    return await client.post("/graphql", json=body, headers=_headers(token, accept))


async def test_the_graphql_response_media_type_is_answered_when_accepted(
    client: httpx.AsyncClient, admin_token: str
) -> None:
    response = await _post(client, admin_token, {"query": "{ me { sub } }"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    assert response.json() == {"data": {"me": {"sub": "root"}}}


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "application/json"),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
        (f"{GRAPHQL_RESPONSE}, application/json;q=0.9", GRAPHQL_RESPONSE),
        (f"application/json, {GRAPHQL_RESPONSE};q=0.5", "application/json"),
    ],
)
async def test_the_response_media_type_follows_accept(
    client: httpx.AsyncClient, admin_token: str, accept: str | None, expected: str
) -> None:
    response = await _post(client, admin_token, {"query": "{ me { sub } }"}, accept)
    assert response.headers["content-type"].split(";")[0] == expected


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"query": "{ me { sub "}, "GRAPHQL_PARSE_FAILED"),
        ({"query": "{ me { nope } }"}, "GRAPHQL_VALIDATION_FAILED"),
        (
            {
                "query": "query($n: Int) { notes(first: $n) { totalCount } }",
                "variables": {"n": "x"},
            },
            "BAD_USER_INPUT",
        ),
    ],
    ids=["parse", "validation", "variable coercion"],
)
async def test_request_errors_are_400_without_data_for_the_graphql_media_type(
    client: httpx.AsyncClient, admin_token: str, body: dict[str, Any], code: str
) -> None:
    response = await _post(client, admin_token, body)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    assert "data" not in response.json()
    assert error_codes(response.json()) == [code]
    legacy = await _post(client, admin_token, body, "application/json")
    assert legacy.status_code == 200
    assert legacy.json()["data"] is None
    assert error_codes(legacy.json()) == [code]


async def test_field_errors_keep_200_and_their_data(
    client: httpx.AsyncClient, admin_token: str
) -> None:
    response = await _post(client, admin_token, {"query": '{ me { sub } note(id: "%%%") { id } }'})
    assert response.status_code == 200
    body = response.json()
    assert body["data"] == {"me": {"sub": "root"}, "note": None}
    assert error_codes(body) == ["BAD_USER_INPUT"]


async def test_queries_over_get_are_refused_in_json(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/graphql", params={"query": "{ me { sub } }"}, headers={"Accept": "application/json"}
    )
    assert response.status_code == 405
    assert response.headers["content-type"].startswith("application/json")
    assert "POST" in response.headers["allow"]
    assert error_codes(response.json()) == ["METHOD_NOT_ALLOWED"]


async def test_batched_requests_are_refused_in_json(
    client: httpx.AsyncClient, admin_token: str
) -> None:
    response = await _post(client, admin_token, [{"query": "{ me { sub } }"}] * 2)
    assert response.status_code == 400
    assert error_codes(response.json()) == ["BAD_REQUEST"]
    assert "Batching" in response.json()["errors"][0]["message"]


async def _post_raw(client: httpx.AsyncClient, token: str, raw: bytes) -> httpx.Response:
    headers = {**_headers(token, "application/json"), "Content-Type": "application/json"}
    return await client.post("/graphql", content=raw, headers=headers)


async def test_json_nested_too_deeply_is_a_400_in_json(
    client: httpx.AsyncClient, admin_token: str, caplog: pytest.LogCaptureFixture
) -> None:
    depth = 100_000
    raw = b'{"query": "{ me { sub } }", "variables": {"v": ' + b"[" * depth + b"]" * depth + b"}}"
    response = await _post_raw(client, admin_token, raw)
    assert response.status_code == 400
    assert error_codes(response.json()) == ["BAD_REQUEST"]
    assert "nests too deeply" in response.json()["errors"][0]["message"]
    assert not [record for record in caplog.records if record.exc_info]


async def test_an_integer_of_5000_digits_is_bad_user_input(
    client: httpx.AsyncClient, admin_token: str
) -> None:
    query = "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }"
    raw = (
        b'{"query": "'
        + query.encode()
        + b'", "variables": {"i": {"metadata": {"n": '
        + b"7" * 5000
        + b"}}}}"
    )
    response = await _post_raw(client, admin_token, raw)
    assert response.status_code == 400
    assert error_codes(response.json()) == ["BAD_USER_INPUT"]
    assert "digits" in response.json()["errors"][0]["message"]


async def test_the_graphql_over_http_audit_passes(live_server: str, admin_token: str) -> None:
    """graphql-http's server audits (the specification's reference checks), run by Node."""
    assert (AUDIT_DIR / "node_modules" / "graphql-http").is_dir(), (
        "the audit's npm packages are missing: run `make .venv/.dev` (npm ci in tests/http-audit)"
    )
    process = await asyncio.create_subprocess_exec(
        "node",
        str(AUDIT_DIR / "audit.mjs"),
        env={
            **os.environ,
            "AUDIT_URL": f"http://{live_server}/graphql",
            "AUDIT_TOKEN": admin_token,
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    results: list[dict[str, Any]] = json.loads(out)
    assert len(results) > 50
    # "error" is a MUST, "warn" a SHOULD; "notice" (a MAY) is what queries over GET get,
    # deliberately off.
    missed = [r for r in results if r["status"] in ("error", "warn")]
    assert missed == []
    assert all("GET" in r["name"] for r in results if r["status"] == "notice"), results
