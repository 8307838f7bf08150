"""What one operation may ask for is measured before any resolver runs.

Every operation here is refused (or accepted) in validation or before it, so the schema
runs without a database: a refusal that reached a resolver would show up as a different
error (no context to run in).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import strawberry
from graphql import get_introspection_query

from fortemi.graphql.limits import MAX_INPUT_DEPTH, MAX_OF_TYPE_DEPTH
from fortemi.graphql.schema import build_schema
from fortemi.platform.settings import Environment, Settings

GRAPHIQL_INTROSPECTION = (Path(__file__).parent / "graphiql_introspection.graphql").read_text()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path)


@pytest.fixture
def schema(settings: Settings) -> strawberry.Schema:
    return build_schema(settings)


def _codes(result: Any) -> list[str]:
    return [error.extensions.get("code") for error in result.errors or []]


def _page_of_content(alias: str, first: int) -> str:
    return f"{alias}: notes(first: {first}) {{ edges {{ node {{ id title content }} }} }}"


async def test_thirty_aliased_pages_of_content_are_too_complex(
    schema: strawberry.Schema, settings: Settings
) -> None:
    query = "{ " + " ".join(_page_of_content(f"a{i}", 100) for i in range(30)) + " }"
    result = await schema.execute(query)
    assert result.data is None
    assert _codes(result) == ["QUERY_TOO_COMPLEX"]
    (error,) = result.errors or []
    assert error.extensions is not None
    assert error.extensions["limit"] == settings.max_query_cost
    assert error.extensions["cost"] > settings.max_query_cost
    assert "FORTEMI_MAX_QUERY_COST" in error.message


async def test_one_full_page_of_content_is_within_the_default_cost(
    schema: strawberry.Schema,
) -> None:
    # Accepted by validation: it reaches the resolver, which has no context to run in.
    result = await schema.execute("{ " + _page_of_content("page", 100) + " }")
    assert "QUERY_TOO_COMPLEX" not in _codes(result)
    assert "GRAPHQL_VALIDATION_FAILED" not in _codes(result)


async def test_a_size_given_by_variable_counts_as_a_full_page(
    schema: strawberry.Schema, settings: Settings
) -> None:
    tight = build_schema(settings.model_copy(update={"max_query_cost": 2000}))
    query = "query($n: Int) { notes(first: $n) { edges { node { content } } } }"
    result = await tight.execute(query, variable_values={"n": 1})
    assert _codes(result) == ["QUERY_TOO_COMPLEX"]


def _doubling_fragments(levels: int, leaf: str) -> str:
    """A query whose fragments each spread the next twice: 2**levels leaves if expanded."""
    fragments = [f"fragment F{levels} on Principal {{ {leaf} }}"]
    fragments += [
        f"fragment F{i} on Principal {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels)
    ]
    return "{ me { ...F0 } } " + " ".join(fragments)


async def test_fragments_spread_many_times_are_measured_once(schema: strawberry.Schema) -> None:
    levels = 20
    result = await schema.execute(_doubling_fragments(levels, "sub"))
    assert _codes(result) == ["QUERY_TOO_COMPLEX"]
    (error,) = result.errors or []
    assert error.extensions is not None
    assert error.extensions["cost"] == 1 + 2**levels


async def test_aliases_inside_fragments_spread_many_times_are_counted(
    schema: strawberry.Schema,
) -> None:
    result = await schema.execute(_doubling_fragments(20, "s: sub"))
    assert "GRAPHQL_VALIDATION_FAILED" in _codes(result)
    assert any(f"uses {2**20} aliases" in e.message for e in result.errors or [])


async def test_an_empty_selection_set_is_a_parse_failure(schema: strawberry.Schema) -> None:
    result = await schema.execute("{ me { } }")
    assert result.data is None
    assert _codes(result) == ["GRAPHQL_PARSE_FAILED"]
    assert "select at least one field" in (result.errors or [])[0].message


async def test_an_unknown_fragment_is_a_validation_error(schema: strawberry.Schema) -> None:
    result = await schema.execute("{ me { ...Missing } }")
    assert _codes(result) == ["GRAPHQL_VALIDATION_FAILED"]
    assert "Unknown fragment 'Missing'" in (result.errors or [])[0].message


@pytest.mark.parametrize(
    "query",
    [GRAPHIQL_INTROSPECTION, get_introspection_query(descriptions=True)],
    ids=["graphiql", "graphql-core"],
)
async def test_the_standard_introspection_queries_are_answered(
    schema: strawberry.Schema, query: str
) -> None:
    result = await schema.execute(query)
    assert result.errors is None
    assert result.data is not None
    assert result.data["__schema"]["queryType"]["name"] == "Query"


async def test_introspection_nesting_of_type_past_the_bound_is_refused(
    schema: strawberry.Schema,
) -> None:
    depth = 25
    chain = "ofType { " * depth + "name" + " }" * depth
    result = await schema.execute('{ __type(name: "Note") { ' + chain + " } }")
    assert result.data is None
    assert _codes(result) == ["GRAPHQL_VALIDATION_FAILED"]
    assert f"at most {MAX_OF_TYPE_DEPTH}" in (result.errors or [])[0].message


async def test_a_list_literal_over_the_bound_is_refused(settings: Settings) -> None:
    schema = build_schema(settings.model_copy(update={"max_list_items": 5}))
    ids = ", ".join(f'"{i}"' for i in range(6))
    result = await schema.execute(f"mutation {{ purgeNotes(ids: [{ids}]) {{ id }} }}")
    assert _codes(result) == ["BAD_USER_INPUT"]
    assert "FORTEMI_MAX_LIST_ITEMS" in (result.errors or [])[0].message


async def test_a_million_ids_are_refused_before_coercion(
    schema: strawberry.Schema, settings: Settings
) -> None:
    # Objects are not IDs: had the list been coerced, the error would name the bad item.
    ids = [{"not": "an id"}] * 1_500_000
    result = await schema.execute(
        "mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }", variable_values={"ids": ids}
    )
    assert result.data is None
    assert _codes(result) == ["BAD_USER_INPUT"]
    (error,) = result.errors or []
    assert "FORTEMI_MAX_LIST_ITEMS" in error.message
    assert error.extensions is not None
    assert error.extensions["limit"] == settings.max_list_items


async def test_variables_nested_past_the_bound_are_refused(schema: strawberry.Schema) -> None:
    nested: object = "leaf"
    for _ in range(MAX_INPUT_DEPTH + 5):
        nested = {"k": nested}
    result = await schema.execute(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        variable_values={"i": {"metadata": nested}},
    )
    assert _codes(result) == ["BAD_USER_INPUT"]
    assert "nests deeper" in (result.errors or [])[0].message


async def test_subscriptions_measure_their_variables_too(schema: strawberry.Schema) -> None:
    stream = await schema.stream(
        "subscription($t: [String!]) { noteEvents(types: $t) { type } }",
        variable_values={"t": ["note.created"] * 5000},
    )
    results = [result async for result in stream]
    assert [_codes(result) for result in results] == [["BAD_USER_INPUT"]]


async def test_production_answers_without_suggestions(settings: Settings) -> None:
    production = build_schema(settings.model_copy(update={"env": Environment.PRODUCTION}))
    result = await production.execute("{ auditLogg { totalCount } }")
    assert _codes(result) == ["GRAPHQL_VALIDATION_FAILED"]
    message = (result.errors or [])[0].message
    assert message == "Cannot query field 'auditLogg' on type 'Query'."


async def test_development_keeps_suggestions(schema: strawberry.Schema) -> None:
    result = await schema.execute("{ auditLogg { totalCount } }")
    assert "Did you mean 'auditLog'?" in (result.errors or [])[0].message
