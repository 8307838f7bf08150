"""GraphQL output types of the vocabulary: schemes, concepts, labels, collections, the
concepts on a note, and the health report.

A concept's fields that need more reading (labels, relations, note count) resolve on
demand in the memory the concept was read from.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from uuid import UUID

import strawberry

from fortemi.graph.vocabulary import models
from fortemi.graph.vocabulary.health import HealthReport
from fortemi.graphql.context import Info
from fortemi.graphql.pagination import Connection, Edge, PageInfo
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes import NoteFilter
from fortemi.platform.pages import Page

__all__ = [
    "Concept",
    "ConceptCollection",
    "ConceptConnection",
    "ConceptDimension",
    "ConceptLabel",
    "ConceptScheme",
    "ConceptSource",
    "ConceptStatus",
    "ConceptText",
    "HealthIssue",
    "HealthIssueKind",
    "LabelKind",
    "NoteConcept",
    "RelatedConcept",
    "SkosImportResult",
    "VocabularyHealth",
]


@strawberry.enum(
    description="Where a concept stands: candidate, controlled (warranted), deprecated"
)
class ConceptStatus(Enum):
    CANDIDATE = "candidate"
    CONTROLLED = "controlled"
    DEPRECATED = "deprecated"


@strawberry.enum(description="What kind of subject a concept names")
class ConceptDimension(Enum):
    DOMAIN = "domain"
    TOPIC = "topic"
    METHODOLOGY = "methodology"
    APPLICATION = "application"
    TECHNIQUE = "technique"
    CONTENT_TYPE = "content_type"


@strawberry.enum(
    description="SKOS label kinds: preferred, alternative, hidden (matched, not shown)"
)
class LabelKind(Enum):
    PREF = "pref"
    ALT = "alt"
    HIDDEN = "hidden"


@strawberry.enum(description="Who attached a concept to a note")
class ConceptSource(Enum):
    USER = "user"
    API = "api"
    AI_AUTO = "ai_auto"
    IMPORT = "import"


def concept_gid(concept_id: UUID) -> strawberry.ID:
    return strawberry.ID(to_global_id("Concept", concept_id))


def scheme_gid(scheme_id: UUID) -> strawberry.ID:
    return strawberry.ID(to_global_id("ConceptScheme", scheme_id))


def collection_gid(collection_id: UUID) -> strawberry.ID:
    return strawberry.ID(to_global_id("ConceptCollection", collection_id))


@strawberry.type(description="A label of a concept, in a language ('' for none)")
class ConceptLabel:
    kind: LabelKind
    label: str
    lang: str

    @classmethod
    def from_model(cls, label: models.ConceptLabel) -> ConceptLabel:
        return cls(kind=LabelKind(label.kind), label=label.label, lang=label.lang)


@strawberry.type(description="A definition or scope note in a language")
class ConceptText:
    kind: str = strawberry.field(description="definition or scope_note")
    lang: str
    text: str


@strawberry.type(description="A SKOS concept scheme: a vocabulary of concepts")
class ConceptScheme:
    id: strawberry.ID
    uri: str | None
    title: str
    description: str | None
    is_default: bool = strawberry.field(
        description="The scheme path tags and concept tagging create their concepts in"
    )
    created_at: datetime
    created_by: str | None
    _memory: strawberry.Private[str]
    _id: strawberry.Private[UUID]

    @strawberry.field(description="Concepts of the scheme that have no broader concept")
    async def top_concepts(self, info: Info) -> list[Concept]:
        catalog = info.context.services.vocabulary.catalog
        top = await catalog.top_concepts(self._memory, self._id)
        return [Concept.from_model(c, self._memory) for c in top]

    @classmethod
    def from_model(cls, scheme: models.ConceptScheme, memory: str) -> ConceptScheme:
        return cls(
            id=scheme_gid(scheme.id),
            uri=scheme.uri,
            title=scheme.title,
            description=scheme.description,
            is_default=scheme.is_default,
            created_at=scheme.created_at,
            created_by=scheme.created_by,
            _memory=memory,
            _id=scheme.id,
        )


@strawberry.type(description="A related concept, with the confidence of the link")
class RelatedConcept:
    concept: Concept
    confidence: float | None
    created_by: str | None


@strawberry.type(description="A SKOS concept")
class Concept:
    id: strawberry.ID
    uri: str | None
    notation: str | None
    status: ConceptStatus
    dimension: ConceptDimension | None
    definition: str | None
    scope_note: str | None
    created_at: datetime
    updated_at: datetime
    created_by: str | None
    _memory: strawberry.Private[str]
    _id: strawberry.Private[UUID]
    _scheme_id: strawberry.Private[UUID]

    @strawberry.field(description="The preferred label: in `lang` if it has one, else the default")
    async def pref_label(self, info: Info, lang: str | None = None) -> str:
        labels = await self._labels(info)
        prefs = [label for label in labels if label.kind == "pref"]
        for wanted in (lang, "", "en"):
            for label in prefs:
                if wanted is not None and label.lang == wanted.lower():
                    return label.label
        return prefs[0].label if prefs else str(self._id)

    @strawberry.field(
        description="Definitions and scope notes per language (definition and scopeNote "
        "are the language-neutral ones)"
    )
    async def texts(self, info: Info) -> list[ConceptText]:
        found = await info.context.services.vocabulary.catalog.notes(self._memory, [self._id])
        return [ConceptText(kind=n.kind, lang=n.lang, text=n.text) for n in found]

    @strawberry.field
    async def labels(self, info: Info) -> list[ConceptLabel]:
        return [ConceptLabel.from_model(label) for label in await self._labels(info)]

    @strawberry.field
    async def scheme(self, info: Info) -> ConceptScheme | None:
        found = await info.context.services.vocabulary.catalog.scheme(self._memory, self._scheme_id)
        return None if found is None else ConceptScheme.from_model(found, self._memory)

    @strawberry.field(description="Broader concepts (at most 3)")
    async def broader(self, info: Info) -> list[Concept]:
        relations = await self._relations(info)
        ids = [r.target_id for r in relations if r.kind == "broader" and r.source_id == self._id]
        return await self._concepts(info, ids)

    @strawberry.field(description="Narrower concepts: the broader links read the other way")
    async def narrower(self, info: Info) -> list[Concept]:
        relations = await self._relations(info)
        ids = [r.source_id for r in relations if r.kind == "broader" and r.target_id == self._id]
        return await self._concepts(info, ids)

    @strawberry.field(description="Related concepts (symmetric)")
    async def related(self, info: Info) -> list[RelatedConcept]:
        relations = [
            r
            for r in await self._relations(info)
            if r.kind == "related" and r.source_id == self._id
        ]
        found = {c._id: c for c in await self._concepts(info, [r.target_id for r in relations])}
        return [
            RelatedConcept(
                concept=found[r.target_id], confidence=r.confidence, created_by=r.created_by
            )
            for r in relations
            if r.target_id in found
        ]

    @strawberry.field(description="Live notes you may read that carry this concept itself")
    async def note_count(self, info: Info) -> int:
        visible = await info.context.visibility(self._memory)
        note_filter = NoteFilter(concepts_any=frozenset({self._id}), visibility=visible)
        return await info.context.services.notes.count(self._memory, note_filter)

    async def _labels(self, info: Info) -> list[models.ConceptLabel]:
        catalog = info.context.services.vocabulary.catalog
        return (await catalog.labels(self._memory, [self._id])).get(self._id, [])

    async def _relations(self, info: Info) -> list[models.ConceptRelation]:
        return await info.context.services.vocabulary.catalog.relations(self._memory, [self._id])

    async def _concepts(self, info: Info, ids: list[UUID]) -> list[Concept]:
        found = await info.context.services.vocabulary.catalog.concepts(self._memory, ids)
        return [Concept.from_model(found[i], self._memory) for i in ids if i in found]

    @classmethod
    def from_model(cls, concept: models.Concept, memory: str) -> Concept:
        return cls(
            id=concept_gid(concept.id),
            uri=concept.uri,
            notation=concept.notation,
            status=ConceptStatus(concept.status),
            dimension=None if concept.dimension is None else ConceptDimension(concept.dimension),
            definition=concept.definition,
            scope_note=concept.scope_note,
            created_at=concept.created_at,
            updated_at=concept.updated_at,
            created_by=concept.created_by,
            _memory=memory,
            _id=concept.id,
            _scheme_id=concept.scheme_id,
        )


@strawberry.type
class ConceptEdge(Edge[Concept]):
    pass


@strawberry.type
class ConceptConnection(Connection[ConceptEdge]):
    @classmethod
    def from_page(cls, page: Page[models.Concept], memory: str) -> ConceptConnection:
        return cls(
            edges=[
                ConceptEdge(cursor=cursor, node=Concept.from_model(concept, memory))
                for cursor, concept in page.items
            ],
            page_info=PageInfo.of(page),
        )


@strawberry.type(description="A SKOS collection: concepts grouped, ordered or not")
class ConceptCollection:
    id: strawberry.ID
    uri: str | None
    label: str
    ordered: bool
    created_at: datetime
    _memory: strawberry.Private[str]
    _members: strawberry.Private[tuple[UUID, ...]]
    _scheme_id: strawberry.Private[UUID]

    @strawberry.field(description="Members, in their order for an ordered collection")
    async def members(self, info: Info) -> list[Concept]:
        found = await info.context.services.vocabulary.catalog.concepts(self._memory, self._members)
        return [Concept.from_model(found[i], self._memory) for i in self._members if i in found]

    @strawberry.field
    async def scheme(self, info: Info) -> ConceptScheme | None:
        found = await info.context.services.vocabulary.catalog.scheme(self._memory, self._scheme_id)
        return None if found is None else ConceptScheme.from_model(found, self._memory)

    @classmethod
    def from_model(cls, collection: models.Collection, memory: str) -> ConceptCollection:
        return cls(
            id=collection_gid(collection.id),
            uri=collection.uri,
            label=collection.label,
            ordered=collection.ordered,
            created_at=collection.created_at,
            _memory=memory,
            _members=collection.members,
            _scheme_id=collection.scheme_id,
        )


@strawberry.type(description="A concept attached to a note, beside its versions")
class NoteConcept:
    label: str = strawberry.field(description="The concept's preferred label")
    dimension: ConceptDimension | None
    source: ConceptSource
    confidence: float
    relevance: float
    primary: bool
    created_at: datetime
    _memory: strawberry.Private[str]
    _id: strawberry.Private[UUID]

    @strawberry.field
    def concept_id(self) -> strawberry.ID:
        return concept_gid(self._id)

    @strawberry.field
    async def concept(self, info: Info) -> Concept | None:
        found = await info.context.services.vocabulary.catalog.concepts(self._memory, [self._id])
        return Concept.from_model(found[self._id], self._memory) if self._id in found else None

    @classmethod
    def from_model(cls, concept: models.NoteConcept, memory: str) -> NoteConcept:
        return cls(
            label=concept.label,
            dimension=None if concept.dimension is None else ConceptDimension(concept.dimension),
            source=ConceptSource(concept.source),
            confidence=round(concept.confidence, 6),
            relevance=round(concept.relevance, 6),
            primary=concept.primary,
            created_at=concept.created_at,
            _memory=memory,
            _id=concept.concept_id,
        )


@strawberry.type(description="What a SKOS import wrote")
class SkosImportResult:
    schemes: list[ConceptScheme]
    concepts: int
    labels: int
    relations: int = strawberry.field(description="Broader links, and related pairs once")
    collections: int


@strawberry.enum(description="A vocabulary anti-pattern")
class HealthIssueKind(Enum):
    OVER_NESTING = "over_nesting"
    META_TAG = "meta_tag"
    ORPHAN = "orphan"
    SYNONYM_SPRAWL = "synonym_sprawl"
    MIXED_HIERARCHY = "mixed_hierarchy"


@strawberry.type(description="One anti-pattern found, with the concepts involved")
class HealthIssue:
    kind: HealthIssueKind
    labels: list[str] = strawberry.field(description="Preferred labels of the concepts, in order")
    detail: str
    _memory: strawberry.Private[str]
    _ids: strawberry.Private[tuple[UUID, ...]]

    @strawberry.field
    def concept_ids(self) -> list[strawberry.ID]:
        return [concept_gid(i) for i in self._ids]

    @strawberry.field
    async def concepts(self, info: Info) -> list[Concept]:
        found = await info.context.services.vocabulary.catalog.concepts(self._memory, self._ids)
        return [Concept.from_model(found[i], self._memory) for i in self._ids if i in found]


@strawberry.type(description="What the vocabulary health check found")
class VocabularyHealth:
    concepts: int = strawberry.field(description="Concepts checked (deprecated ones are not)")
    issues: list[HealthIssue]

    @strawberry.field
    def over_nesting(self) -> int:
        return self._count(HealthIssueKind.OVER_NESTING)

    @strawberry.field
    def meta_tags(self) -> int:
        return self._count(HealthIssueKind.META_TAG)

    @strawberry.field
    def orphans(self) -> int:
        return self._count(HealthIssueKind.ORPHAN)

    @strawberry.field
    def synonym_sprawl(self) -> int:
        return self._count(HealthIssueKind.SYNONYM_SPRAWL)

    @strawberry.field
    def mixed_hierarchies(self) -> int:
        return self._count(HealthIssueKind.MIXED_HIERARCHY)

    def _count(self, kind: HealthIssueKind) -> int:
        return sum(1 for issue in self.issues if issue.kind is kind)

    @classmethod
    def from_model(cls, report: HealthReport, memory: str) -> VocabularyHealth:
        return cls(
            concepts=report.concepts,
            issues=[
                HealthIssue(
                    kind=HealthIssueKind(issue.kind),
                    labels=list(issue.labels),
                    detail=issue.detail,
                    _memory=memory,
                    _ids=issue.concept_ids,
                )
                for issue in report.issues
            ],
        )
