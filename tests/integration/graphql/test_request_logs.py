"""Log lines written while serving a request carry that request's id."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import httpx
import pytest

from fortemi.platform import logs


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    stream = io.StringIO()
    logs.configure_logging("INFO", "json", stream=stream)
    yield stream
    root.handlers[:], level = saved
    root.setLevel(level)


async def test_a_refused_requests_log_line_names_the_request_id_it_answered_with(
    client: httpx.AsyncClient, json_logs: io.StringIO
) -> None:
    response = await client.post(
        "/graphql",
        json={"query": "{ me { sub } }"},
        headers={"Authorization": "Bearer not-a-jwt"},
    )
    assert response.status_code == 401
    request_id = response.json()["errors"][0]["extensions"]["requestId"]
    lines = [json.loads(line) for line in json_logs.getvalue().splitlines()]
    refused = [line for line in lines if line["logger"] == "fortemi.graphql.view"]
    assert refused, lines
    assert {line["request_id"] for line in refused} == {request_id}
    assert request_id in refused[0]["message"]
