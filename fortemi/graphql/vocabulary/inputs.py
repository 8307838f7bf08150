"""GraphQL inputs of the vocabulary, and their translation into service values."""

from __future__ import annotations

import strawberry

from fortemi.graph.vocabulary.catalog.service import ConceptChange, ConceptDraft
from fortemi.graph.vocabulary.models import ConceptProposal
from fortemi.graph.vocabulary.service import path_of
from fortemi.graphql.vocabulary.types import ConceptDimension, ConceptStatus
from fortemi.platform.errors import BadUserInput
from fortemi.platform.ids import parse_id

__all__ = [
    "ConceptSchemeInput",
    "CreateConceptCollectionInput",
    "CreateConceptInput",
    "NoteConceptInput",
    "UpdateConceptInput",
]


@strawberry.input
class ConceptSchemeInput:
    title: str | None = None
    uri: str | None = None
    description: str | None = None


@strawberry.input
class CreateConceptInput:
    scheme: strawberry.ID
    pref_label: str
    lang: str = ""
    alt_labels: list[str] | None = None
    hidden_labels: list[str] | None = None
    definition: str | None = None
    scope_note: str | None = None
    dimension: ConceptDimension | None = None
    notation: str | None = None
    uri: str | None = None
    broader: list[strawberry.ID] | None = strawberry.field(
        default=None, description="At most 3 broader concepts"
    )

    def to_model(self) -> ConceptDraft:
        return ConceptDraft(
            scheme_id=parse_id(self.scheme, "ConceptScheme"),
            pref_label=self.pref_label,
            lang=self.lang,
            alt_labels=tuple(self.alt_labels or ()),
            hidden_labels=tuple(self.hidden_labels or ()),
            definition=self.definition,
            scope_note=self.scope_note,
            dimension=None if self.dimension is None else self.dimension.value,
            notation=self.notation,
            uri=self.uri,
            broader=tuple(parse_id(b, "Concept") for b in self.broader or ()),
        )


@strawberry.input(description='Fields left out keep their value; "" clears a text field')
class UpdateConceptInput:
    status: ConceptStatus | None = strawberry.field(
        default=None, description="controlled needs 3 notes (literary warrant)"
    )
    dimension: ConceptDimension | None = None
    clear_dimension: bool = False
    definition: str | None = None
    scope_note: str | None = None
    notation: str | None = None
    uri: str | None = None

    def to_model(self) -> ConceptChange:
        return ConceptChange(
            status=None if self.status is None else self.status.value,
            dimension=None if self.dimension is None else self.dimension.value,
            clear_dimension=self.clear_dimension,
            definition=self.definition,
            scope_note=self.scope_note,
            notation=self.notation,
            uri=self.uri,
        )


@strawberry.input
class CreateConceptCollectionInput:
    scheme: strawberry.ID
    label: str
    ordered: bool = False
    uri: str | None = None
    members: list[strawberry.ID] | None = None


@strawberry.input(description="A concept for a note: a path tag (a/b/c) or an existing concept")
class NoteConceptInput:
    path: str | None = strawberry.field(
        default=None, description="Labels from the top, '/'-separated; missing ones are created"
    )
    concept: strawberry.ID | None = None
    dimension: ConceptDimension | None = None
    confidence: float = 1.0
    relevance: float = 1.0
    primary: bool = False

    def to_model(self) -> ConceptProposal:
        if (self.path is None) == (self.concept is None):
            raise BadUserInput("Give either path or concept for each concept", field="concepts")
        path = () if self.path is None else path_of(self.path)
        if self.path is not None and not path:
            raise BadUserInput("A concept path needs at least one label", field="path")
        return ConceptProposal(
            path=path,
            dimension=None if self.dimension is None else self.dimension.value,
            confidence=self.confidence,
            relevance=self.relevance,
            primary=self.primary,
            concept_id=None if self.concept is None else parse_id(self.concept, "Concept"),
        )
