"""OWASP's GraphQL controls: limits, masking, a committed SDL."""

from __future__ import annotations

from pathlib import Path

import pytest

from fortemi.graphql.schema import build_schema, print_sdl
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

SDL_FILE = Path(__file__).resolve().parents[3] / "schema.graphql"


def test_committed_sdl_matches_the_schema(settings: Settings) -> None:
    current = print_sdl(build_schema(settings))
    assert SDL_FILE.read_text(encoding="utf-8") == current, (
        "schema.graphql is stale: run `make schema` and commit the result"
    )


async def test_queries_deeper_than_the_limit_are_refused_before_execution(
    settings: Settings,
) -> None:
    shallow = build_schema(settings.model_copy(update={"max_query_depth": 2}))
    result = await shallow.execute("{ notes { edges { node { id } } } }")
    assert result.data is None
    assert result.errors
    assert "exceeds maximum operation depth" in result.errors[0].message


async def test_too_many_aliases_are_refused(gql: GraphQLCall, settings: Settings) -> None:
    aliases = " ".join(f"a{i}: me {{ sub }}" for i in range(settings.max_aliases + 1))
    body = await gql("{ " + aliases + " }")
    assert body.get("data") is None
    assert error_codes(body) == ["GRAPHQL_VALIDATION_FAILED"]


async def test_too_many_tokens_are_refused(gql: GraphQLCall, settings: Settings) -> None:
    fields = " ".join("sub" for _ in range(settings.max_query_tokens))
    body = await gql("{ me { " + fields + " } }")
    assert body.get("data") is None
    assert error_codes(body)


async def test_syntax_errors_have_a_stable_code(gql: GraphQLCall) -> None:
    body = await gql("{ me { sub ")
    assert error_codes(body) == ["GRAPHQL_PARSE_FAILED"]


async def test_unexpected_errors_are_masked_with_a_request_id(
    gql: GraphQLCall,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals: password=hunter2")

    monkeypatch.setattr(runtime.notes, "count", broken)
    body = await gql("{ notes { totalCount } }")
    assert error_codes(body) == ["INTERNAL_SERVER_ERROR"]
    message = body["errors"][0]["message"]
    assert "hunter2" not in str(body)
    request_id = body["errors"][0]["extensions"]["requestId"]
    assert request_id in message
    assert any(request_id in record.getMessage() for record in caplog.records)
