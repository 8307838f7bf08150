"""The table declaration drives the select list, the row mapping and the binds."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import pytest

from fortemi.platform.sql import BindError, Query, Table, named


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True, slots=True)
class Thing:
    id: int
    name: str
    tags: tuple[str, ...]
    colour: Colour
    previous: Colour | None


@dataclass(frozen=True, slots=True)
class ThingWithSize:
    id: int
    name: str
    tags: tuple[str, ...]
    colour: Colour
    previous: Colour | None
    size: int


RECORD = {"id": 1, "name": "a", "tags": ["x", "y"], "colour": "red", "previous": None, "size": 3}


def test_a_field_added_to_the_model_is_selected_mapped_and_inserted() -> None:
    before, after = Table("thing", Thing), Table("thing", ThingWithSize)

    assert "size" not in before.select_list
    assert after.select_list == "id, name, tags, colour, previous, size"
    assert after.from_record(RECORD).size == 3
    insert = after.insert()
    assert insert.sql == (
        "INSERT INTO thing (id, name, tags, colour, previous, size) VALUES ($1, $2, $3, $4, $5, $6)"
    )
    assert insert.names[-1] == "size"
    row = after.from_record(RECORD)
    assert insert.args(after.binds(row)) == (1, "a", ["x", "y"], "red", None, 3)


def test_from_record_converts_by_the_field_annotation() -> None:
    thing = Table("thing", Thing).from_record({**RECORD, "previous": "blue"})

    assert thing == Thing(1, "a", ("x", "y"), Colour.RED, Colour.BLUE)
    assert type(thing.tags) is tuple
    assert Table("thing", Thing).from_record(RECORD).previous is None


def test_convert_overrides_the_annotation_and_must_name_a_column() -> None:
    table = Table("thing", Thing, convert={"name": str.upper})

    assert table.from_record(RECORD).name == "A"
    with pytest.raises(TypeError, match="nmae"):
        Table("thing", Thing, convert={"nmae": str.upper})


def test_omitted_fields_are_neither_selected_nor_read() -> None:
    @dataclass(frozen=True)
    class Sparse:
        id: int
        derived: str = "default"
        name: str = ""

    table = Table("sparse", Sparse, omit={"derived"})

    assert table.select_list == "id, name"
    assert table.from_record({"id": 2, "name": "b"}) == Sparse(2, "default", "b")


def test_query_substitutes_the_declared_select_list_and_name() -> None:
    table = Table("thing", Thing)

    query = table.query("SELECT {columns} FROM {table} JOIN x ON true WHERE {t.columns} IS NULL")

    assert query.sql == (
        "SELECT id, name, tags, colour, previous FROM thing JOIN x ON true "
        "WHERE t.id, t.name, t.tags, t.colour, t.previous IS NULL"
    )


def test_named_binds_number_each_name_once_and_leave_casts_alone() -> None:
    query = Query("SELECT :a::uuid, :b, :a, x[1:2], $9::text, '::c' WHERE y = :b::int[]")

    assert query.sql == "SELECT $1::uuid, $2, $1, x[1:2], $9::text, '::c' WHERE y = $2::int[]"
    assert query.names == ("a", "b")
    assert query.args(b=2, a=1) == (1, 2)
    assert query.args({"a": 1}, b=2) == (1, 2)


def test_a_missing_bind_raises_instead_of_sending_null() -> None:
    query = Query("UPDATE t SET title = :title, content = :content WHERE id = :id")

    with pytest.raises(BindError, match=":content"):
        query.args(title="t", id=1)


def test_a_value_with_no_bind_raises() -> None:
    with pytest.raises(BindError, match="titel"):
        Query("UPDATE t SET title = :title").args(title="t", titel="t")


def test_named_compiles_and_binds_in_one_step() -> None:
    assert named("SELECT :x + :y, :x", y=2, x=1) == ("SELECT $1 + $2, $1", (1, 2))


def test_a_table_needs_a_dataclass() -> None:
    with pytest.raises(TypeError, match="not a dataclass"):
        Table("thing", dict)


def test_no_converter_sees_null() -> None:
    table = Table("thing", Thing, convert={"name": str.upper})

    thing = table.from_record({**RECORD, "name": None, "tags": None})

    assert [thing.name, thing.tags, thing.previous] == [None, None, None]


def test_names_lists_declared_columns_and_refuses_others() -> None:
    table = Table("thing", Thing)

    assert table.names("id", "colour") == "id, colour"
    assert table.names("id", "colour", alias="t") == "t.id, t.colour"
    with pytest.raises(TypeError, match="thing declares no column size"):
        table.names("id", "size")


def test_insert_takes_fixed_expressions_and_refuses_undeclared_columns() -> None:
    table = Table("thing", Thing)

    insert = table.insert(("id", "name", "colour"), values={"colour": "'red'"})

    assert insert.sql == "INSERT INTO thing (id, name, colour) VALUES ($1, $2, 'red')"
    assert insert.names == ("id", "name")
    with pytest.raises(TypeError, match="thing declares no column size"):
        table.insert(("id", "size"))
    with pytest.raises(TypeError, match="values names a column the insert lacks: colour"):
        table.insert(("id", "name"), values={"colour": "'red'"})
