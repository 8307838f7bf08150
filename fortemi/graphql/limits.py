"""Bounds on the work one GraphQL request may ask for, checked before any resolver runs.

Two checks, both before graphql-core coerces a single variable:

* :func:`operation_limits_rule` — a validation rule over each operation, with fragments
  expanded: its depth, its aliases, its *cost* (what the response may hold: list sizes
  times selections, large text fields weighted), how deep introspection nests ``ofType``,
  empty selection sets, and list literals. Each fragment is measured once, however often
  it is spread: expanding spreads of spreads would cost 2**n for n lines of document.
* :func:`oversized_variables` — the variables as decoded from JSON: lists longer than the
  bound and nesting deeper than the bound are refused before coercion, whose cost grows
  with every item (seconds, on the event loop, for a million ids).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationRule,
    get_named_type,
    is_leaf_type,
)
from graphql.utilities import type_from_ast

__all__ = [
    "MAX_INPUT_DEPTH",
    "MAX_OF_TYPE_DEPTH",
    "QueryLimits",
    "operation_limits_rule",
    "oversized_variables",
]

# Fields whose value may be a whole note (up to FORTEMI_MAX_NOTE_BYTES each).
TEXT_FIELDS = frozenset({"content", "chunk", "markdown", "unified"})
# Arguments that set how many items a field returns.
SIZE_ARGUMENTS = ("first", "limit")
# A list with no size argument (tags, versions, memories) is counted as this many items.
UNSIZED_LIST_ITEMS = 10
# graphql-core's introspection query nests ofType 9 deep, GraphiQL's (graphql-js 16) 7;
# no type in this schema wraps deeper than [X!]! (3).
MAX_OF_TYPE_DEPTH = 10
# Variables nest no deeper than this (JSON metadata included): deeper values would be
# refused later by recursion limits in encoders, as an internal error.
MAX_INPUT_DEPTH = 64


@dataclass(frozen=True)
class QueryLimits:
    """What one operation may ask for (from the settings of the same names)."""

    max_depth: int
    max_aliases: int
    max_cost: int
    max_list_items: int
    default_page_size: int
    text_field_cost: int = 100


@dataclass(frozen=True)
class _Shape:
    depth: int  # levels of fields below the top one, introspection not counted
    cost: int
    of_types: int  # most ``ofType`` fields on one path
    aliases: int


_NOTHING = _Shape(0, 0, 0, 0)


class _Walker:
    """Measures selection sets with fragments expanded, each fragment once.

    Memoised per fragment (and whether it opens a page), so a document that spreads one
    fragment many times over costs no more to measure than its length; unknown and cyclic
    fragments count as nothing (their own validation rules report them).
    """

    def __init__(self, rule: ValidationRule, limits: QueryLimits) -> None:
        self.schema = rule.context.schema
        self.limits = limits
        self.fragments = {
            definition.name.value: definition
            for definition in rule.context.document.definitions
            if isinstance(definition, FragmentDefinitionNode)
        }
        self.memo: dict[tuple[str, bool], _Shape] = {}
        self.active: set[str] = set()

    def selections(
        self, selection_set: SelectionSetNode, parent: GraphQLNamedType | None, page: bool
    ) -> _Shape:
        depth = cost = of_types = aliases = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                shape = self.field(selection, parent, page)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = type_from_ast(self.schema, condition) if condition else parent
                shape = self.selections(selection.selection_set, _named(inner), page)
            elif isinstance(selection, FragmentSpreadNode):
                shape = self.spread(selection.name.value, page)
            else:  # pragma: no cover - the grammar has no other selection
                continue
            depth = max(depth, shape.depth)
            cost += shape.cost
            of_types = max(of_types, shape.of_types)
            aliases += shape.aliases
        return _Shape(depth, cost, of_types, aliases)

    def spread(self, name: str, page: bool) -> _Shape:
        key = (name, page)
        if key in self.memo:
            return self.memo[key]
        fragment = self.fragments.get(name)
        if fragment is None or name in self.active:
            return _NOTHING
        self.active.add(name)
        try:
            condition = _named(type_from_ast(self.schema, fragment.type_condition))
            shape = self.selections(fragment.selection_set, condition, page)
        finally:
            self.active.discard(name)
        self.memo[key] = shape
        return shape

    def field(self, node: FieldNode, parent: GraphQLNamedType | None, page: bool) -> _Shape:
        name = node.name.value
        definition = None
        if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
            definition = parent.fields.get(name)
        # Introspection fields and unknown ones (validation reports those) have no type
        # here: they cost one each, unmultiplied, and only their ofType nesting counts.
        field_type = definition.type if definition is not None else None
        named = get_named_type(field_type) if field_type is not None else None
        sized = definition is not None and any(arg in definition.args for arg in SIZE_ARGUMENTS)
        children = _NOTHING
        if node.selection_set is not None:
            children = self.selections(node.selection_set, named, page=sized)
        if sized:
            items = self.size(node, definition)
        elif _is_list(field_type):
            # The list right under a sized field is the page its size already counted.
            items = 1 if page else UNSIZED_LIST_ITEMS
        else:
            items = 1
        weight = 1
        if name in TEXT_FIELDS and named is not None and is_leaf_type(named):
            weight = self.limits.text_field_cost
        depth = 0
        if node.selection_set is not None and not name.startswith("__"):
            depth = 1 + children.depth
        of_types = children.of_types + (1 if name == "ofType" else 0)
        aliases = children.aliases + (1 if node.alias is not None else 0)
        return _Shape(depth, items * (weight + children.cost), of_types, aliases)

    def size(self, node: FieldNode, definition: Any) -> int:
        """Items a sized field may return: its literal size, else its default or a page."""
        for argument in node.arguments or ():
            if argument.name.value in SIZE_ARGUMENTS:
                if isinstance(argument.value, IntValueNode):
                    try:
                        given = int(argument.value.value)
                    except ValueError:  # more digits than Python converts
                        return self.limits.max_list_items
                    return max(0, min(given, self.limits.max_list_items))
                # A variable may hold anything up to a page: count the page.
                return self.limits.default_page_size
        for name in SIZE_ARGUMENTS:
            argument = definition.args.get(name)
            if argument is not None and isinstance(argument.default_value, int):
                return min(argument.default_value, self.limits.max_list_items)
        return self.limits.default_page_size


def _named(type_: Any) -> GraphQLNamedType | None:
    return get_named_type(type_) if type_ is not None else None


def _is_list(type_: Any) -> bool:
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    return isinstance(type_, GraphQLList)


def _error(message: str, node: Any, code: str, **extensions: object) -> GraphQLError:
    return GraphQLError(message, node, extensions={"code": code, **extensions})


def _over_limits(
    name: str, shape: _Shape, limits: QueryLimits
) -> list[tuple[str, str, dict[str, object]]]:
    """(message, code, extensions) for each limit ``shape`` of operation ``name`` breaks."""
    over: list[tuple[str, str, dict[str, object]]] = []
    if shape.depth > limits.max_depth:
        over.append(
            (
                f"'{name}' exceeds maximum operation depth of {limits.max_depth} "
                "(FORTEMI_MAX_QUERY_DEPTH)",
                "GRAPHQL_VALIDATION_FAILED",
                {},
            )
        )
    if shape.aliases > limits.max_aliases:
        over.append(
            (
                f"'{name}' uses {shape.aliases} aliases; at most {limits.max_aliases} "
                "are allowed (FORTEMI_MAX_ALIASES)",
                "GRAPHQL_VALIDATION_FAILED",
                {},
            )
        )
    if shape.cost > limits.max_cost:
        over.append(
            (
                f"Operation '{name}' may cost {shape.cost}, over the limit of "
                f"{limits.max_cost} (FORTEMI_MAX_QUERY_COST): ask for fewer items "
                "(first, limit), use fewer aliases, or leave out large text fields "
                "such as content",
                "QUERY_TOO_COMPLEX",
                {"cost": shape.cost, "limit": limits.max_cost},
            )
        )
    if shape.of_types > MAX_OF_TYPE_DEPTH:
        over.append(
            (
                f"Introspection nests ofType {shape.of_types} deep; at most "
                f"{MAX_OF_TYPE_DEPTH} are answered",
                "GRAPHQL_VALIDATION_FAILED",
                {},
            )
        )
    return over


def operation_limits_rule(limits: QueryLimits) -> type[ValidationRule]:
    """A validation rule enforcing ``limits`` on every operation of a document."""

    class OperationLimitsRule(ValidationRule):
        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            root = self.context.schema.get_root_type(node.operation)
            shape = _Walker(self, limits).selections(node.selection_set, root, page=False)
            name = node.name.value if node.name else "anonymous"
            for message, code, extensions in _over_limits(name, shape, limits):
                self.report_error(_error(message, node, code, **extensions))

        def enter_selection_set(self, node: SelectionSetNode, *_: Any) -> None:
            # The released spec's grammar has no empty selection set (graphql-core 3.3
            # follows a draft that allows it): a typing slip, answered as a syntax error.
            if not node.selections:
                self.report_error(
                    _error(
                        "Syntax Error: empty selection set: select at least one field inside { }",
                        node,
                        "GRAPHQL_PARSE_FAILED",
                    )
                )

        def enter_list_value(self, node: ListValueNode, *_: Any) -> None:
            if len(node.values) > limits.max_list_items:
                self.report_error(
                    _error(
                        f"A list holds {len(node.values)} items; at most "
                        f"{limits.max_list_items} are accepted (FORTEMI_MAX_LIST_ITEMS)",
                        node,
                        "BAD_USER_INPUT",
                    )
                )

    return OperationLimitsRule


def oversized_variables(
    variables: Mapping[str, object] | None, *, max_items: int, max_depth: int = MAX_INPUT_DEPTH
) -> GraphQLError | None:
    """The first list over ``max_items`` or nesting over ``max_depth``, as an error.

    Lists are measured by ``len`` before their items are looked at, so a refused list
    costs nothing to refuse; an accepted one is walked once, without recursion.
    """
    stack: list[tuple[str, object, int]] = [
        (f"${name}", value, 1) for name, value in (variables or {}).items()
    ]
    while stack:
        path, value, depth = stack.pop()
        items: Any
        if isinstance(value, list):
            if len(value) > max_items:
                return GraphQLError(
                    f"Variable '{path}' holds {len(value)} items; a list may hold at most "
                    f"{max_items} (FORTEMI_MAX_LIST_ITEMS)",
                    extensions={"code": "BAD_USER_INPUT", "limit": max_items},
                )
            items = enumerate(value)
        elif isinstance(value, dict):
            items = value.items()
        else:
            continue
        if depth > max_depth:
            return GraphQLError(
                f"Variable '{path}' nests deeper than {max_depth} levels",
                extensions={"code": "BAD_USER_INPUT", "limit": max_depth},
            )
        for key, item in items:
            if isinstance(item, list | dict):
                stack.append((f"{path}.{key}", item, depth + 1))
    return None
