"""A fast path for completing objects whose fields are all plain leaf attributes.

graphql-core executes every field of every object on its own: resolve info, the resolver,
completion, each a few microseconds. A neighbourhood of 200 nodes and 350 edges is about
5,000 such fields, which measured 25-70 ms on this project's machines: past the whole
request's budget for ``graph`` (p95 <= 20 ms). For an object type registered with
:func:`flat` whose every field is a stored attribute of a leaf type (scalar, enum, or a
list of them) with no resolver, permission or field extension, :func:`complete_flat`
builds the response dict directly from the collected selection (aliases, fragments,
``@skip``/``@include`` and ``__typename`` are honoured, since graphql-core's own
``collect_subfields`` does the collecting) and coerces each value as graphql-core would.

A list may also come as :class:`Columns` (one sequence per attribute): the fast path then
reads each column as it is, with no object per item; the ordinary path, when it has to
answer, iterates it and gets the items built from the columns. A column of
:class:`~fortemi.platform.isotext.IsoTimes` (times PostgreSQL wrote as ``isoformat()``
text) goes out as its texts when the field's scalar is shown, at plan time, to answer
exactly ``isoformat()``; any other completion sees its items as ``datetime`` values.

Anything it does not cover (a null in a non-null field, a value the scalar refuses, a field
it has no plan for) returns None, and the caller completes the object the ordinary way,
which reports the error as usual. The tests compare both paths on the same documents.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from itertools import repeat
from operator import attrgetter, setitem
from typing import Any, TypeVar

from graphql import (
    GraphQLBoolean,
    GraphQLFloat,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLString,
    Undefined,
    is_enum_type,
    is_leaf_type,
)

from fortemi.platform.isotext import IsoTimes

__all__ = ["Columns", "complete_flat", "complete_flat_list", "flat", "flat_item_type", "flat_plan"]

T = TypeVar("T")

_FLAT: set[str] = set()
_PLANS: dict[int, tuple[GraphQLObjectType, dict[str, _Leaf] | None]] = {}
_DEFINITION = "strawberry-definition"


class Columns(Sequence[T]):
    """A list of ``build(**{attribute: column[i]})`` items kept as its columns.

    Every column has one value per item. :func:`complete_flat_list` reads the columns by
    attribute; anything else (the ordinary completion) sees a sequence of built items."""

    __slots__ = ("_build", "_length", "columns")

    def __init__(
        self, build: Callable[..., T], columns: Mapping[str, Sequence[Any]], length: int
    ) -> None:
        if any(len(column) != length for column in columns.values()):
            raise ValueError("every column must have one value per item")
        self._build = build
        self._length = length
        self.columns = columns

    def __len__(self) -> int:
        return self._length

    def _item(self, index: int) -> T:
        return self._build(**{name: column[index] for name, column in self.columns.items()})

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(self._length))]
        if not -self._length <= index < self._length:
            raise IndexError(index)
        return self._item(index % self._length)

    def __iter__(self) -> Iterator[T]:
        return map(self._item, range(self._length))


def flat(cls: type[T]) -> type[T]:
    """Mark a Strawberry type (named as its class) for the fast path."""
    _FLAT.add(cls.__name__)
    return cls


@dataclass(frozen=True, slots=True)
class _Leaf:
    attribute: str
    coerce: Callable[[Any], Any]
    non_null: bool
    is_list: bool
    # The Python type the built-in scalar returns unchanged (str for String and ID, bool,
    # int within 32 bits, finite float): such a value skips the coercion call.
    exact: type | None = None
    # An enum: few distinct values a column, each coerced once (strawberry's enum coercion
    # scans the enum's values for every one).
    enum: bool = False
    # The scalar answers ``value.isoformat()`` for a datetime: an IsoTimes column is
    # already its output.
    isoformat: bool = False


_EXACT: dict[str, type] = {
    GraphQLString.name: str,
    GraphQLID.name: str,
    GraphQLBoolean.name: bool,
    GraphQLInt.name: int,
    GraphQLFloat.name: float,
}
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# graphql-core's own scalar objects: a schema may define its own scalar under a built-in's
# name only by replacing it, and then its coercion is the one to call.
_BUILTIN = (GraphQLString, GraphQLID, GraphQLBoolean, GraphQLInt, GraphQLFloat)


# Times the probe below formats: microseconds or none, UTC, another offset, naive.
_PROBES = (
    datetime(2001, 2, 3, 4, 5, 6, 7, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2026, 7, 1, 12, 0, 0, 500000, tzinfo=timezone(timedelta(hours=5, minutes=45))),
    datetime.max,
)


def _formats_isoformat(coerce: Callable[[Any], Any]) -> bool:
    try:
        return all(coerce(probe) == probe.isoformat() for probe in _PROBES)
    except Exception:  # a scalar that refuses a datetime does not format it
        return False


def _leaf(field: Any) -> _Leaf | None:
    definition = field.extensions.get(_DEFINITION) if field.extensions else None
    if definition is None or definition.base_resolver is not None:
        return None
    if definition.permission_classes or definition.extensions or definition.directives:
        return None
    kind, non_null, is_list = field.type, False, False
    if isinstance(kind, GraphQLNonNull):
        kind, non_null = kind.of_type, True
    if isinstance(kind, GraphQLList):
        if not isinstance(kind.of_type, GraphQLNonNull):
            return None  # a null item would need the ordinary path's error handling
        kind, is_list = kind.of_type.of_type, True
    if not is_leaf_type(kind):
        return None
    builtin = kind in _BUILTIN
    exact = _EXACT.get(kind.name) if builtin else None
    enum = is_enum_type(kind)
    return _Leaf(
        definition.python_name,
        kind.coerce_output_value,
        non_null,
        is_list,
        exact,
        enum=enum,
        isoformat=not (builtin or enum) and _formats_isoformat(kind.coerce_output_value),
    )


def flat_plan(return_type: GraphQLObjectType) -> Mapping[str, _Leaf] | None:
    """How to complete ``return_type`` on the fast path; None when it does not qualify."""
    if return_type.name not in _FLAT:
        return None
    cached = _PLANS.get(id(return_type))
    if cached is not None and cached[0] is return_type:
        return cached[1]
    plan: dict[str, _Leaf] | None = {}
    for name, field in return_type.fields.items():
        leaf = _leaf(field)
        if leaf is None:
            plan = None
            break
        plan[name] = leaf  # type: ignore[index]
    _PLANS[id(return_type)] = (return_type, plan)  # keeps the type alive with its id
    return plan


_Selection = list[tuple[str, _Leaf | None]]  # response name, leaf (None: __typename)


def _selection(
    plan: Mapping[str, _Leaf], grouped_field_set: Mapping[str, Any]
) -> _Selection | None:
    selection: _Selection = []
    for response_name, details in grouped_field_set.items():
        name = details[0].node.name.value
        if name == "__typename":
            selection.append((response_name, None))
            continue
        leaf = plan.get(name)
        if leaf is None:
            return None
        selection.append((response_name, leaf))
    return selection


def _column(leaf: _Leaf, values: list[Any]) -> list[Any] | None:
    """One field's output values over every item, or None when the ordinary path must
    answer (a null in a non-null field, a value the scalar refuses).

    Column by column rather than item by item: most columns are of one Python type that the
    built-in scalar returns unchanged (titles, ids, depths, flags), which ``set(map(type,
    ...))``, ``min``/``max`` and ``all(map(isfinite, ...))`` confirm in C, leaving Python
    work only for the columns that really need coercing (dates, enums)."""
    present = values
    if None in values:
        if leaf.non_null:
            return None
        present = [value for value in values if value is not None]
    if leaf.is_list:
        coerce = leaf.coerce
        lists = [None if value is None else [coerce(item) for item in value] for value in values]
        for items in lists:
            if items is not None and any(item is None or item is Undefined for item in items):
                return None
        return lists
    exact = leaf.exact
    if exact is not None and set(map(type, present)) <= {exact}:
        if not present or (
            (exact is not int or (_INT_MIN <= min(present) and max(present) <= _INT_MAX))
            and (exact is not float or all(map(math.isfinite, present)))
        ):
            return values
    coerce = leaf.coerce
    if leaf.enum:
        # By identity: members are singletons, and an enum's __hash__ is Python code.
        once = {id(value): value for value in present}
        once = {key: coerce(value) for key, value in once.items()}
        coerced = [None if value is None else once[id(value)] for value in values]
    else:
        coerced = [None if value is None else coerce(value) for value in values]
    for value, out in zip(values, coerced, strict=True):
        if value is not None and (out is None or out is Undefined):
            return None
    return coerced


def _complete_all(
    selection: _Selection, type_name: str, items: Sequence[Any]
) -> list[dict[str, Any]] | None:
    names = [response_name for response_name, _ in selection]
    given = items.columns if isinstance(items, Columns) else None
    columns: list[list[Any]] = []
    for _, leaf in selection:
        if leaf is None:
            columns.append([type_name] * len(items))
            continue
        given_column = None if given is None else given[leaf.attribute]
        if isinstance(given_column, IsoTimes) and leaf.isoformat and not leaf.is_list:
            columns.append(list(given_column.texts))  # never NULL, already the output
            continue
        values = (
            list(map(attrgetter(leaf.attribute), items))
            if given is None
            else list(given[leaf.attribute])
        )
        column = _column(leaf, values)
        if column is None:
            return None
        columns.append(column)
    # Filled column by column: one C-level ``map`` of ``setitem`` per field, where a dict
    # built from each row's ``zip`` cost three times as much (a tuple per row, a zip per
    # dict). Keys go in in selection order, so each dict's order is the response's.
    count = len(items)
    if any(len(column) != count for column in columns):
        return None
    completed: list[dict[str, Any]] = [{} for _ in range(count)]
    for name, column in zip(names, columns, strict=True):
        deque(map(setitem, completed, repeat(name), column), maxlen=0)
    return completed


def complete_flat(
    plan: Mapping[str, _Leaf], grouped_field_set: Mapping[str, Any], type_name: str, source: Any
) -> dict[str, Any] | None:
    """The completed object, or None when the ordinary path must complete it."""
    completed = complete_flat_list(plan, grouped_field_set, type_name, [source])
    return None if completed is None else completed[0]


def flat_item_type(list_type: GraphQLList[Any]) -> GraphQLObjectType | None:
    """The item type of ``[T!]`` when ``T`` is flat; None otherwise (a nullable item
    needs the ordinary path's error handling)."""
    item = list_type.of_type
    if not isinstance(item, GraphQLNonNull) or not isinstance(item.of_type, GraphQLObjectType):
        return None
    return item.of_type if flat_plan(item.of_type) is not None else None


def complete_flat_list(
    plan: Mapping[str, _Leaf], grouped_field_set: Mapping[str, Any], type_name: str, items: Any
) -> list[dict[str, Any]] | None:
    """Every item completed on the fast path, or None if one of them cannot be."""
    selection = _selection(plan, grouped_field_set)
    if selection is None:
        return None
    try:
        return _complete_all(
            selection, type_name, items if isinstance(items, Columns) else list(items)
        )
    except Exception:  # any refusal is the ordinary path's to report, as usual
        return None
