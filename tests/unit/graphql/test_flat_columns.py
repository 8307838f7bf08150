"""A list given as columns (fortemi.graphql.flat.Columns) answers exactly what the same
items, given as objects, answer through graphql-core's ordinary execution."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, cast

import pytest
import strawberry

from fortemi.graphql.flat import Columns
from fortemi.graphql.schema import PerEventExecutor
from tests.unit.graphql.test_flat import DOCUMENTS, Box, Dot, _dot

_ATTRIBUTES = [field.name for field in fields(Dot)]


def _columns(dots: list[Dot]) -> Columns[Dot]:
    return Columns(
        Dot,
        {name: [getattr(dot, name) for dot in dots] for name in _ATTRIBUTES},
        len(dots),
    )


def _schemas(columns: Box, objects: Box) -> tuple[strawberry.Schema, strawberry.Schema]:
    @strawberry.type
    class Query:
        @strawberry.field
        def box(self) -> Box:
            return columns

        @strawberry.field
        def plain(self) -> Box:
            return objects

    return (
        strawberry.Schema(query=Query, execution_context_class=PerEventExecutor),
        strawberry.Schema(query=Query),
    )


async def _both(dots: list[Dot], document: str) -> tuple[Any, Any]:
    boxed = Box(dots=cast(list[Dot], _columns(dots)), first=_dot(7))
    fast, ordinary = _schemas(boxed, Box(dots=dots, first=_dot(7)))
    variables = {"skip": True}
    got = await fast.execute(document, variable_values=variables)
    expected = await ordinary.execute(document.replace("box", "plain"), variable_values=variables)
    return got, expected


def _renamed(data: Any) -> Any:
    if data is None:  # a non-null error propagated to the root
        return None
    return {"box" if key == "plain" else key: value for key, value in data.items()}


@pytest.mark.parametrize("document", DOCUMENTS)
async def test_columns_answer_what_ordinary_execution_of_the_objects_answers(
    document: str,
) -> None:
    got, expected = await _both([_dot(i) for i in range(5)], document)
    assert expected.errors is None
    assert got.errors is None
    assert got.data == _renamed(expected.data)


async def test_columns_the_fast_path_refuses_are_answered_ordinarily_from_built_items() -> None:
    # A None in a non-null field: the fast path gives up and graphql-core iterates the
    # columns as built items, reporting the same error at the same path.
    dots = [_dot(1), _dot(2, label=None), _dot(3)]
    got, expected = await _both(dots, "{ box { dots { id label } } }")
    assert expected.errors is not None
    assert got.errors is not None
    assert [e.message for e in got.errors] == [e.message for e in expected.errors]
    assert [e.path for e in got.errors] == [
        ["box" if p == "plain" else p for p in e.path or []] for e in expected.errors
    ]
    assert got.data == _renamed(expected.data)


def test_columns_build_their_items_by_index_and_slice() -> None:
    dots = [_dot(i) for i in range(4)]
    columns = _columns(dots)
    assert len(columns) == 4
    assert list(columns) == dots
    assert columns[-1] == dots[-1]
    assert columns[1:3] == dots[1:3]
    with pytest.raises(IndexError):
        columns[4]


def test_columns_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="one value per item"):
        Columns(Dot, {"id": ["a", "b"], "name": ["x"]}, 2)
