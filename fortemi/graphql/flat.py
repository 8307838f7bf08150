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

Anything it does not cover (a null in a non-null field, a value the scalar refuses, a field
it has no plan for) returns None, and the caller completes the object the ordinary way,
which reports the error as usual. The tests compare both paths on the same documents.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
    is_leaf_type,
)

__all__ = ["complete_flat", "complete_flat_list", "flat", "flat_item_type", "flat_plan"]

T = TypeVar("T")

_FLAT: set[str] = set()
_PLANS: dict[int, tuple[GraphQLObjectType, dict[str, _Leaf] | None]] = {}
_DEFINITION = "strawberry-definition"


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


def _unchanged(leaf: _Leaf, value: Any) -> bool:
    kind = type(value)
    if kind is not leaf.exact:
        return False
    if kind is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if kind is float:
        return math.isfinite(value)
    return True


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
    return _Leaf(definition.python_name, kind.coerce_output_value, non_null, is_list, exact)


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


def _complete(selection: _Selection, type_name: str, source: Any) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    for response_name, leaf in selection:
        if leaf is None:
            data[response_name] = type_name
            continue
        value = getattr(source, leaf.attribute)
        if value is None:
            if leaf.non_null:
                return None
            data[response_name] = None
            continue
        if leaf.is_list:
            coerced: Any = [leaf.coerce(item) for item in value]
            if any(item is None or item is Undefined for item in coerced):
                return None
        elif _unchanged(leaf, value):
            coerced = value
        else:
            coerced = leaf.coerce(value)
            if coerced is None or coerced is Undefined:
                return None
        data[response_name] = coerced
    return data


def complete_flat(
    plan: Mapping[str, _Leaf], grouped_field_set: Mapping[str, Any], type_name: str, source: Any
) -> dict[str, Any] | None:
    """The completed object, or None when the ordinary path must complete it."""
    selection = _selection(plan, grouped_field_set)
    if selection is None:
        return None
    try:
        return _complete(selection, type_name, source)
    except Exception:  # any refusal is the ordinary path's to report, as usual
        return None


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
    completed = []
    try:
        for item in items:
            data = _complete(selection, type_name, item)
            if data is None:
                return None
            completed.append(data)
    except Exception:  # any refusal is the ordinary path's to report, as usual
        return None
    return completed
