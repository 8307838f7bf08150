"""Concept filters for note lists and search: ids expanded to concept sets (each with its
narrower concepts) through the vocabulary service, then handed to the note filter, which
applies them in SQL before ranking and LIMIT like the tag filters.

An unknown concept or scheme id is BAD_USER_INPUT naming it: a strict filter on something
that does not exist is a mistake the caller wants to hear about, not an empty result
that looks like "no notes".
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import strawberry

from fortemi.graphql.context import Info
from fortemi.platform.ids import parse_id

__all__ = ["ConceptFilter", "ConceptSets", "concept_sets"]


@strawberry.input(
    description="Concept conditions, each matching the concept or scheme and everything "
    "narrower; applied before ranking"
)
class ConceptFilter:
    required: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Concepts the note must carry, all of them (AND)"
    )
    any: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Concepts of which the note carries at least one (OR)"
    )
    excluded: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Concepts the note must not carry (NOT)"
    )
    required_schemes: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Schemes the note must carry a concept of, each of them"
    )
    any_schemes: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Schemes of which the note carries at least one concept"
    )
    excluded_schemes: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Schemes none of whose concepts the note carries"
    )


@dataclass(frozen=True, slots=True)
class ConceptSets:
    """The note filter's concept fields."""

    all: tuple[frozenset[UUID], ...] = ()
    any: frozenset[UUID] | None = None
    none: frozenset[UUID] = frozenset()


def _ids(values: list[strawberry.ID] | None, type_name: str) -> list[UUID]:
    return [parse_id(value, type_name) for value in values or ()]


async def concept_sets(info: Info, memory: str, given: ConceptFilter | None) -> ConceptSets:
    if given is None:
        return ConceptSets()
    expand = info.context.services.vocabulary.expand
    parts = [
        (_ids(given.required, "Concept"), _ids(given.required_schemes, "ConceptScheme")),
        (_ids(given.any, "Concept"), _ids(given.any_schemes, "ConceptScheme")),
        (_ids(given.excluded, "Concept"), _ids(given.excluded_schemes, "ConceptScheme")),
    ]
    required, anyof, excluded = [await expand(memory, c, s) for c, s in parts]
    any_given = bool(given.any or given.any_schemes)
    return ConceptSets(
        all=tuple(required),
        any=frozenset().union(*anyof) if any_given else None,
        none=frozenset().union(*excluded),
    )
