"""Queries and mutations of the vocabulary, in the request's memory.

Access: the vocabulary is memory-level data, like the memory itself. Reading it needs what
every resolver needs, entering the memory (memory ``read``: anyone who can read a note of
the memory has it); what concepts say about notes follows note readability (a concept's
``noteCount`` counts only notes the caller may read, ``Note.concepts`` is reached through a
readable note). Governance (schemes, concepts, labels, relations, collections, import)
needs memory ``admin``. Attaching and detaching a note's concepts needs ``write`` on the
note, which is looked up first (not-found before forbidden). Every decision is audited by
the authorizer.
"""

from __future__ import annotations

import strawberry

from fortemi.auth.decision import Action, Resource
from fortemi.graph.vocabulary.catalog.service import ConceptChange
from fortemi.graphql.context import Info
from fortemi.graphql.vocabulary.inputs import (
    ConceptSchemeInput,
    CreateConceptCollectionInput,
    CreateConceptInput,
    NoteConceptInput,
    UpdateConceptInput,
)
from fortemi.graphql.vocabulary.types import (
    Concept,
    ConceptCollection,
    ConceptConnection,
    ConceptLabel,
    ConceptScheme,
    ConceptStatus,
    LabelKind,
    NoteConcept,
    SkosImportResult,
    VocabularyHealth,
)
from fortemi.platform.errors import NotFound
from fortemi.platform.ids import parse_id, parse_note_id

__all__ = ["VocabularyMutation", "VocabularyQuery"]


async def _governing(info: Info) -> str:
    """The request's memory, once the caller may govern its vocabulary (memory admin)."""
    memory = await info.context.memory()
    await info.context.authorize(Action.ADMIN, Resource.of_memory(memory))
    return memory


async def _concept(info: Info, memory: str, concept_id: strawberry.ID) -> Concept:
    ident = parse_id(concept_id, "Concept")
    found = await info.context.services.vocabulary.catalog.concepts(memory, [ident])
    if ident not in found:
        raise NotFound(f"No concept {ident} in this memory", id=str(ident))
    return Concept.from_model(found[ident], memory)


@strawberry.type
class VocabularyQuery:
    @strawberry.field(description="The memory's concept schemes, oldest first")
    async def concept_schemes(self, info: Info) -> list[ConceptScheme]:
        memory = await info.context.memory()
        schemes = await info.context.services.vocabulary.catalog.schemes(memory)
        return [ConceptScheme.from_model(s, memory) for s in schemes]

    @strawberry.field(description="A concept scheme by id; null if absent")
    async def concept_scheme(self, info: Info, id: strawberry.ID) -> ConceptScheme | None:
        memory = await info.context.memory()
        found = await info.context.services.vocabulary.catalog.scheme(
            memory, parse_id(id, "ConceptScheme")
        )
        return None if found is None else ConceptScheme.from_model(found, memory)

    @strawberry.field(description="A concept by id; null if absent")
    async def concept(self, info: Info, id: strawberry.ID) -> Concept | None:
        memory = await info.context.memory()
        try:
            return await _concept(info, memory, id)
        except NotFound:
            return None

    @strawberry.field(description="Concepts, newest first, by scheme, status and label prefix")
    async def concepts(
        self,
        info: Info,
        scheme: strawberry.ID | None = None,
        status: ConceptStatus | None = None,
        label: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> ConceptConnection:
        memory = await info.context.memory()
        page = await info.context.services.vocabulary.catalog.list_concepts(
            memory,
            scheme_id=None if scheme is None else parse_id(scheme, "ConceptScheme"),
            status=None if status is None else status.value,
            label_prefix=label,
            first=first,
            after=after,
        )
        return ConceptConnection.from_page(page, memory)

    @strawberry.field(description="Concept collections, of one scheme or all")
    async def concept_collections(
        self, info: Info, scheme: strawberry.ID | None = None
    ) -> list[ConceptCollection]:
        memory = await info.context.memory()
        found = await info.context.services.vocabulary.collections.collections(
            memory, None if scheme is None else parse_id(scheme, "ConceptScheme")
        )
        return [ConceptCollection.from_model(c, memory) for c in found]

    @strawberry.field(
        description="Anti-patterns in the vocabulary: over-nesting, meta tags, orphans, "
        "synonym sprawl, mixed hierarchies"
    )
    async def vocabulary_health(self, info: Info) -> VocabularyHealth:
        memory = await info.context.memory()
        report = await info.context.services.vocabulary.catalog.health(memory)
        return VocabularyHealth.from_model(report, memory)

    @strawberry.field(
        description="The vocabulary, or one scheme of it, as SKOS Turtle (what the model "
        "holds: schemes, concepts, labels, notes, relations, collections)"
    )
    async def export_skos(self, info: Info, scheme: strawberry.ID | None = None) -> str:
        memory = await info.context.memory()
        scheme_id = None if scheme is None else parse_id(scheme, "ConceptScheme")
        return await info.context.services.vocabulary.skos.export_turtle(memory, scheme_id)


@strawberry.type
class VocabularyMutation:
    # -- a note's concepts (write on the note) ---------------------------------------------

    @strawberry.mutation(
        description="Attach concepts to a note (source api), by path tag or id; missing "
        "path components are created as candidates. Never makes a version."
    )
    async def tag_note_concepts(
        self, info: Info, note: strawberry.ID, concepts: list[NoteConceptInput]
    ) -> list[NoteConcept]:
        proposals = [c.to_model() for c in concepts]
        context = info.context
        memory, found = await context.readable_note(parse_note_id(note))
        await context.authorize(Action.WRITE, Resource.of_note(memory, found.project, found.skill))
        attached = await context.services.vocabulary.tag_note(
            memory, found.id, proposals, source="api", actor=context.caller.sub
        )
        return [NoteConcept.from_model(c, memory) for c in attached]

    @strawberry.mutation(description="Detach a concept from a note; false if it was not on it")
    async def untag_note_concept(
        self, info: Info, note: strawberry.ID, concept: strawberry.ID
    ) -> bool:
        context = info.context
        concept_id = parse_id(concept, "Concept")
        memory, found = await context.readable_note(parse_note_id(note))
        await context.authorize(Action.WRITE, Resource.of_note(memory, found.project, found.skill))
        return await context.services.vocabulary.untag_note(
            memory, found.id, concept_id, actor=context.caller.sub
        )

    # -- governance (memory admin) ---------------------------------------------------------

    @strawberry.mutation(
        description="Import a SKOS vocabulary in Turtle (memory admin): all of it or nothing; "
        "concepts come in as candidates (or deprecated). schemeTitle names the scheme for "
        "concepts the file puts in none."
    )
    async def import_skos(
        self, info: Info, turtle: str, scheme_title: str | None = None
    ) -> SkosImportResult:
        memory = await _governing(info)
        result = await info.context.services.vocabulary.skos.import_turtle(
            memory, turtle, fallback_title=scheme_title, actor=info.context.caller.sub
        )
        return SkosImportResult(
            schemes=[ConceptScheme.from_model(s, memory) for s in result.schemes],
            concepts=result.concepts,
            labels=result.labels,
            relations=result.relations,
            collections=result.collections,
        )

    @strawberry.mutation(description="Create a concept scheme (memory admin)")
    async def create_concept_scheme(self, info: Info, input: ConceptSchemeInput) -> ConceptScheme:
        memory = await _governing(info)
        scheme = await info.context.services.vocabulary.catalog.create_scheme(
            memory,
            title=input.title or "",
            uri=input.uri,
            description=input.description,
            actor=info.context.caller.sub,
        )
        return ConceptScheme.from_model(scheme, memory)

    @strawberry.mutation(description="Change a scheme's title, URI or description (memory admin)")
    async def update_concept_scheme(
        self, info: Info, id: strawberry.ID, input: ConceptSchemeInput
    ) -> ConceptScheme:
        memory = await _governing(info)
        scheme = await info.context.services.vocabulary.catalog.update_scheme(
            memory,
            parse_id(id, "ConceptScheme"),
            title=input.title,
            uri=input.uri,
            description=input.description,
            actor=info.context.caller.sub,
        )
        return ConceptScheme.from_model(scheme, memory)

    @strawberry.mutation(
        description="Delete a scheme with its concepts and their attachments (memory admin)"
    )
    async def delete_concept_scheme(self, info: Info, id: strawberry.ID) -> bool:
        memory = await _governing(info)
        await info.context.services.vocabulary.catalog.delete_scheme(
            memory, parse_id(id, "ConceptScheme"), actor=info.context.caller.sub
        )
        return True

    @strawberry.mutation(description="Create a candidate concept (memory admin)")
    async def create_concept(self, info: Info, input: CreateConceptInput) -> Concept:
        draft = input.to_model()
        memory = await _governing(info)
        concept = await info.context.services.vocabulary.catalog.create_concept(
            memory, draft, actor=info.context.caller.sub
        )
        return Concept.from_model(concept, memory)

    @strawberry.mutation(description="Change a concept's status, dimension or notes (memory admin)")
    async def update_concept(
        self, info: Info, id: strawberry.ID, input: UpdateConceptInput
    ) -> Concept:
        change: ConceptChange = input.to_model()
        memory = await _governing(info)
        concept = await info.context.services.vocabulary.catalog.update_concept(
            memory, parse_id(id, "Concept"), change, actor=info.context.caller.sub
        )
        return Concept.from_model(concept, memory)

    @strawberry.mutation(description="Delete a concept (memory admin); prefer deprecating it")
    async def delete_concept(self, info: Info, id: strawberry.ID) -> bool:
        memory = await _governing(info)
        await info.context.services.vocabulary.catalog.delete_concept(
            memory, parse_id(id, "Concept"), actor=info.context.caller.sub
        )
        return True

    @strawberry.mutation(
        description="Add a label; a preferred one replaces the pref label in its language"
    )
    async def add_concept_label(
        self, info: Info, id: strawberry.ID, kind: LabelKind, label: str, lang: str = ""
    ) -> list[ConceptLabel]:
        memory = await _governing(info)
        labels = await info.context.services.vocabulary.catalog.add_label(
            memory,
            parse_id(id, "Concept"),
            kind=kind.value,
            label=label,
            lang=lang,
            actor=info.context.caller.sub,
        )
        return [ConceptLabel.from_model(label) for label in labels]

    @strawberry.mutation(description="Remove a label (a concept keeps one preferred label)")
    async def remove_concept_label(
        self, info: Info, id: strawberry.ID, kind: LabelKind, label: str, lang: str = ""
    ) -> list[ConceptLabel]:
        memory = await _governing(info)
        labels = await info.context.services.vocabulary.catalog.remove_label(
            memory,
            parse_id(id, "Concept"),
            kind=kind.value,
            label=label,
            lang=lang,
            actor=info.context.caller.sub,
        )
        return [ConceptLabel.from_model(label) for label in labels]

    @strawberry.mutation(description="Make `broader` a broader concept of `id` (memory admin)")
    async def add_broader_concept(
        self, info: Info, id: strawberry.ID, broader: strawberry.ID
    ) -> Concept:
        memory = await _governing(info)
        await info.context.services.vocabulary.catalog.add_broader(
            memory,
            parse_id(id, "Concept"),
            parse_id(broader, "Concept"),
            actor=info.context.caller.sub,
        )
        return await _concept(info, memory, id)

    @strawberry.mutation(description="Remove a broader link (memory admin)")
    async def remove_broader_concept(
        self, info: Info, id: strawberry.ID, broader: strawberry.ID
    ) -> Concept:
        memory = await _governing(info)
        await info.context.services.vocabulary.catalog.remove_broader(
            memory,
            parse_id(id, "Concept"),
            parse_id(broader, "Concept"),
            actor=info.context.caller.sub,
        )
        return await _concept(info, memory, id)

    @strawberry.mutation(description="Relate two concepts, both ways (memory admin)")
    async def relate_concepts(
        self,
        info: Info,
        id: strawberry.ID,
        related: strawberry.ID,
        confidence: float | None = None,
    ) -> Concept:
        memory = await _governing(info)
        await info.context.services.vocabulary.catalog.relate(
            memory,
            parse_id(id, "Concept"),
            parse_id(related, "Concept"),
            confidence=confidence,
            actor=info.context.caller.sub,
        )
        return await _concept(info, memory, id)

    @strawberry.mutation(description="Remove a related link, both ways (memory admin)")
    async def unrelate_concepts(
        self, info: Info, id: strawberry.ID, related: strawberry.ID
    ) -> Concept:
        memory = await _governing(info)
        await info.context.services.vocabulary.catalog.unrelate(
            memory,
            parse_id(id, "Concept"),
            parse_id(related, "Concept"),
            actor=info.context.caller.sub,
        )
        return await _concept(info, memory, id)

    @strawberry.mutation(description="Create a collection of concepts (memory admin)")
    async def create_concept_collection(
        self, info: Info, input: CreateConceptCollectionInput
    ) -> ConceptCollection:
        members = [parse_id(m, "Concept") for m in input.members or ()]
        memory = await _governing(info)
        collection = await info.context.services.vocabulary.collections.create_collection(
            memory,
            scheme_id=parse_id(input.scheme, "ConceptScheme"),
            label=input.label,
            ordered=input.ordered,
            uri=input.uri,
            members=members,
            actor=info.context.caller.sub,
        )
        return ConceptCollection.from_model(collection, memory)

    @strawberry.mutation(description="Replace a collection's members, in order (memory admin)")
    async def set_concept_collection_members(
        self, info: Info, id: strawberry.ID, members: list[strawberry.ID]
    ) -> ConceptCollection:
        wanted = [parse_id(m, "Concept") for m in members]
        memory = await _governing(info)
        collection = await info.context.services.vocabulary.collections.set_collection_members(
            memory, parse_id(id, "ConceptCollection"), wanted, actor=info.context.caller.sub
        )
        return ConceptCollection.from_model(collection, memory)

    @strawberry.mutation(description="Delete a collection (its concepts stay) (memory admin)")
    async def delete_concept_collection(self, info: Info, id: strawberry.ID) -> bool:
        memory = await _governing(info)
        await info.context.services.vocabulary.collections.delete_collection(
            memory, parse_id(id, "ConceptCollection"), actor=info.context.caller.sub
        )
        return True
