"""The flat fast path answers exactly what graphql-core's ordinary execution answers."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest
import strawberry

from fortemi.graphql.flat import flat, flat_plan
from fortemi.graphql.schema import PerEventExecutor


@strawberry.enum
class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@flat
@strawberry.type
class Dot:
    id: strawberry.ID
    name: str
    size: int
    weight: float | None
    colour: Colour
    seen_at: datetime
    tags: list[str]
    label: str  # non-null: a None here must give the ordinary error


@strawberry.type
class Box:
    dots: list[Dot]
    first: Dot


_AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _dot(i: int, label: Any = "x") -> Dot:
    return Dot(
        id=strawberry.ID(f"d{i}"), name=f"dot {i}", size=i, weight=None if i % 2 else i / 3,
        colour=Colour.RED if i % 2 else Colour.BLUE, seen_at=_AT, tags=[f"t{i}", "all"],
        label=label,
    )  # fmt: skip


def _schemas(box: Box) -> tuple[strawberry.Schema, strawberry.Schema]:
    @strawberry.type
    class Query:
        @strawberry.field
        def box(self) -> Box:
            return box

    return (
        strawberry.Schema(query=Query, execution_context_class=PerEventExecutor),
        strawberry.Schema(query=Query),
    )


DOCUMENTS = [
    "{ box { dots { id name size weight colour seenAt tags label } } }",
    "{ box { dots { __typename ident: id n: name weight } first { colour c2: colour } } }",
    "query($skip: Boolean!) { box { dots { id name @skip(if: $skip) size @include(if: $skip) } } }",
    "fragment F on Dot { name tags } { box { dots { id ...F ... on Dot { size } } } }",
    "{ box { dots { __typename } first { __typename t: __typename } } }",
    "{ box { dots { colour c: colour seenAt weight } } }",
]


@pytest.mark.parametrize("document", DOCUMENTS)
async def test_the_fast_path_answers_what_ordinary_execution_answers(document: str) -> None:
    fast, ordinary = _schemas(Box(dots=[_dot(i) for i in range(5)], first=_dot(7)))
    variables = {"skip": True}
    expected = await ordinary.execute(document, variable_values=variables)
    got = await fast.execute(document, variable_values=variables)
    assert expected.errors is None
    assert got.errors is None
    assert got.data == expected.data


async def test_a_null_in_a_non_null_field_gives_the_ordinary_error() -> None:
    fast, ordinary = _schemas(Box(dots=[_dot(1), _dot(2, label=None)], first=_dot(3)))
    document = "{ box { dots { id label } } }"
    expected = await ordinary.execute(document)
    got = await fast.execute(document)
    assert expected.errors is not None
    assert got.errors is not None
    assert [e.message for e in got.errors] == [e.message for e in expected.errors]
    assert got.data == expected.data


def test_only_registered_types_of_plain_leaf_fields_take_the_fast_path() -> None:
    fast, _ = _schemas(Box(dots=[], first=_dot(1)))
    schema = fast._schema
    dot = schema.get_type("Dot")
    box = schema.get_type("Box")
    assert flat_plan(dot) is not None  # type: ignore[arg-type]
    assert flat_plan(box) is None  # type: ignore[arg-type]


def test_built_in_scalars_skip_coercion_only_for_values_they_return_unchanged() -> None:
    fast, _ = _schemas(Box(dots=[], first=_dot(1)))
    plan = flat_plan(fast._schema.get_type("Dot"))  # type: ignore[arg-type]
    assert plan is not None
    assert plan["name"].exact is str
    assert plan["size"].exact is int
    assert plan["seenAt"].exact is None  # DateTime is coerced (isoformat)
    assert plan["colour"].exact is None  # enums map values to names


async def test_values_a_built_in_scalar_refuses_give_the_ordinary_error() -> None:
    big = _dot(1)
    big.size = 2**40
    fast, ordinary = _schemas(Box(dots=[big], first=_dot(2)))
    document = "{ box { dots { id size } } }"
    expected = await ordinary.execute(document)
    got = await fast.execute(document)
    assert expected.errors is not None
    assert got.errors is not None
    assert [e.message for e in got.errors] == [e.message for e in expected.errors]


async def test_a_column_mixing_types_or_holding_nulls_answers_as_ordinary_execution() -> None:
    # Fields are completed column by column: a Float column of ints and floats is coerced
    # as a whole, a nullable column keeps its gaps, an empty list is an empty list.
    dots = [_dot(i) for i in range(6)]
    dots[2].weight = 4  # an int in a Float field
    dots[4].weight = None
    fast, ordinary = _schemas(Box(dots=dots, first=_dot(7)))
    document = "{ box { dots { id weight size colour } } }"
    expected = await ordinary.execute(document)
    got = await fast.execute(document)
    assert expected.errors is None
    assert got.errors is None
    assert got.data == expected.data
    assert got.data is not None
    assert [dot["weight"] for dot in got.data["box"]["dots"]] == [0.0, None, 4.0, None, None, None]
    empty, ordinary_empty = _schemas(Box(dots=[], first=_dot(1)))
    assert (await empty.execute(document)).data == (await ordinary_empty.execute(document)).data


async def test_a_value_an_enum_refuses_gives_the_ordinary_error() -> None:
    bad = _dot(1)
    bad.colour = "green"  # type: ignore[assignment]
    fast, ordinary = _schemas(Box(dots=[_dot(2), bad], first=_dot(3)))
    document = "{ box { dots { id colour } } }"
    expected = await ordinary.execute(document)
    got = await fast.execute(document)
    assert expected.errors is not None
    assert got.errors is not None
    assert [e.message for e in got.errors] == [e.message for e in expected.errors]
    assert got.data == expected.data
