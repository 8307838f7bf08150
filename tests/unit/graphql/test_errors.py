"""Request errors get their code from where they came from, not from how they read.

The parser's errors are GRAPHQL_PARSE_FAILED, the executor's variable coercion errors
BAD_USER_INPUT, and the validation rules' GRAPHQL_VALIDATION_FAILED, whatever their
messages begin with. Every operation here fails before any resolver runs, so the schema
runs without a database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import strawberry
from graphql import GraphQLError

from fortemi.graphql.errors import VariableValuesError, render_error
from fortemi.graphql.schema import build_schema
from fortemi.platform.settings import Settings


@pytest.fixture
def schema(tmp_path: Path) -> strawberry.Schema:
    return build_schema(Settings(home=tmp_path))


def _codes(result: Any) -> list[str]:
    assert result.data is None
    return [error.extensions.get("code") for error in result.errors or []]


async def test_a_syntax_error_is_a_parse_failure(schema: strawberry.Schema) -> None:
    assert _codes(await schema.execute("{ me { sub ")) == ["GRAPHQL_PARSE_FAILED"]


async def test_a_document_over_the_token_limit_is_a_parse_failure(tmp_path: Path) -> None:
    tight = build_schema(Settings(home=tmp_path, max_query_tokens=10))
    query = "{ me { " + " ".join("sub" for _ in range(20)) + " } }"
    assert _codes(await tight.execute(query)) == ["GRAPHQL_PARSE_FAILED"]


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        ("query($n: Int) { notes(first: $n) { totalCount } }", {"n": "x"}),
        ("query($n: Int!) { notes(first: $n) { totalCount } }", {}),
    ],
    ids=["wrong-type", "missing-required"],
)
async def test_a_variable_value_the_operation_cannot_take_is_bad_user_input(
    schema: strawberry.Schema, query: str, variables: dict[str, Any]
) -> None:
    assert _codes(await schema.execute(query, variable_values=variables)) == ["BAD_USER_INPUT"]


async def test_coercion_errors_whose_message_names_no_variable_are_bad_user_input(
    schema: strawberry.Schema,
) -> None:
    # Past graphql-core's limit of coercion errors it adds one that reads "Too many
    # errors processing variables...": still the caller's input.
    query = "mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }"
    result = await schema.execute(query, variable_values={"ids": [None] * 60})
    codes = _codes(result)
    assert len(codes) > 50
    assert set(codes) == {"BAD_USER_INPUT"}
    assert result.errors is not None
    assert not result.errors[-1].message.startswith("Variable '$")


@pytest.mark.parametrize(
    "query",
    [
        "query($n: Int) { me { sub } }",
        "query { notes(first: $n) { totalCount } }",
        "query($n: String) { notes(first: $n) { totalCount } }",
    ],
    ids=["unused", "undefined", "wrong-position"],
)
async def test_a_validation_error_about_a_variable_is_a_validation_failure(
    schema: strawberry.Schema, query: str
) -> None:
    result = await schema.execute(query)
    assert result.errors is not None
    assert any(error.message.startswith("Variable '$") for error in result.errors)
    assert set(_codes(result)) == {"GRAPHQL_VALIDATION_FAILED"}


def test_the_code_follows_the_error_type_not_the_message() -> None:
    coerced = VariableValuesError.of(GraphQLError("Syntax Error: looks like a parse error"))
    validated = GraphQLError("Variable '$n' looks like coercion")
    assert render_error(coerced, "r1").extensions == {"code": "BAD_USER_INPUT"}
    assert render_error(validated, "r1").extensions == {"code": "GRAPHQL_VALIDATION_FAILED"}


async def test_a_subscription_variable_it_cannot_take_is_bad_user_input(
    schema: strawberry.Schema,
) -> None:
    # Over WebSocket, past graphql-core's error limit: only the origin says "coercion".
    stream = await schema.stream(
        "subscription($t: [String!]) { noteEvents(types: $t) { type } }",
        variable_values={"t": [None] * 60},
    )
    results = [result async for result in stream]
    assert len(results) == 1
    codes = _codes(results[0])
    assert len(codes) > 50
    assert set(codes) == {"BAD_USER_INPUT"}
