"""Vocabulary governance: what a memory admin does to schemes, concepts, their labels and
relations, and collections. The GraphQL layer checks memory ``admin`` before calling.

Invariants kept here, in one locked transaction per change (the vocabulary lock of
:mod:`fortemi.graph.vocabulary.repository`, so checks and writes cannot interleave):

* one preferred label per language per concept, and no two concepts of one scheme with the
  same preferred label in one language (SKOS's recommendation; CONFLICT otherwise); a
  label is pref, alt or hidden for a concept, never two of them at once (SKOS S13);
* ``broader`` is stored once (narrower reads it the other way), never forms a cycle, at
  most 3 per concept, at most 5 levels; ``related`` is stored both ways and never joins a
  concept to one of its broader or narrower concepts (SKOS S27);
* ``controlled`` needs the literary warrant (3 live notes); URIs are unique in the memory.

Each change publishes ``graph.vocabulary_changed`` after its commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from uuid import UUID, uuid4

from fortemi.graph.vocabulary.catalog.changes import Governed, missing
from fortemi.graph.vocabulary.catalog.repository import pref_taken
from fortemi.graph.vocabulary.health import HealthReport, assess
from fortemi.graph.vocabulary.hierarchy import wiring_problem
from fortemi.graph.vocabulary.models import (
    LITERARY_WARRANT,
    MAX_BROADER,
    MAX_DEPTH,
    Concept,
    ConceptLabel,
    ConceptNote,
    ConceptRelation,
    ConceptScheme,
)
from fortemi.graph.vocabulary.validation import (
    check_confidence,
    check_dimension,
    check_kind,
    check_label,
    check_lang,
    check_status,
    check_text,
    check_title,
    check_uri,
)
from fortemi.platform.database import Connection
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.pages import Page, rows_to_fetch
from fortemi.platform.sql import KeysetCursor

__all__ = ["ConceptChange", "ConceptDraft", "VocabularyCatalog"]

DEFAULT_PAGE = 50
MAX_PAGE = 500
_CURSOR = KeysetCursor("c1")


@dataclass(frozen=True, slots=True)
class ConceptDraft:
    scheme_id: UUID
    pref_label: str
    lang: str = ""
    alt_labels: tuple[str, ...] = ()
    hidden_labels: tuple[str, ...] = ()
    definition: str | None = None
    scope_note: str | None = None
    dimension: str | None = None
    notation: str | None = None
    uri: str | None = None
    broader: tuple[UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class ConceptChange:
    """Fields to change; None keeps the value, "" clears a text field."""

    status: str | None = None
    dimension: str | None = None
    definition: str | None = None
    scope_note: str | None = None
    notation: str | None = None
    uri: str | None = None
    clear_dimension: bool = False


class VocabularyCatalog(Governed):
    """Reading and governing a memory's vocabulary."""

    # -- reads -----------------------------------------------------------------------------

    async def schemes(self, memory: str) -> list[ConceptScheme]:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.schemes(conn)

    async def scheme(self, memory: str, scheme_id: UUID) -> ConceptScheme | None:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.scheme(conn, scheme_id)

    async def concepts(self, memory: str, ids: Sequence[UUID]) -> dict[UUID, Concept]:
        if not ids:
            return {}
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.concepts(conn, ids)

    async def top_concepts(self, memory: str, scheme_id: UUID) -> list[Concept]:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.top_concepts(conn, scheme_id)

    async def list_concepts(
        self,
        memory: str,
        *,
        scheme_id: UUID | None = None,
        status: str | None = None,
        label_prefix: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> Page[Concept]:
        """Concepts newest first, by scheme, status and label prefix (case-insensitive)."""
        if first is None:
            first = DEFAULT_PAGE
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise BadUserInput("first must be zero or a positive integer", field="first")
        limit = min(first, MAX_PAGE)
        status = None if status is None else check_status(status)
        prefix = None if not label_prefix else check_label(label_prefix, "label").lower()
        position = None if after is None else _CURSOR.decode(after)
        async with self._db.memory_transaction(memory) as conn:
            rows = await self._repo.list_concepts(
                conn,
                scheme_id=scheme_id,
                status=status,
                prefix=prefix,
                after=_CURSOR.through(position),
                limit=rows_to_fetch(limit, position),
            )
        return _CURSOR.page(rows, limit=limit, after=position)

    async def labels(self, memory: str, ids: Sequence[UUID]) -> dict[UUID, list[ConceptLabel]]:
        if not ids:
            return {}
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.labels(conn, ids)

    async def notes(self, memory: str, ids: Sequence[UUID]) -> list[ConceptNote]:
        """Definitions and scope notes per language of ``ids``."""
        if not ids:
            return []
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.notes(conn, ids)

    async def relations(self, memory: str, ids: Sequence[UUID]) -> list[ConceptRelation]:
        """Every broader and related row touching one of ``ids``."""
        if not ids:
            return []
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.relations(conn, ids)

    async def health(self, memory: str) -> HealthReport:
        """The vocabulary's anti-patterns (see :mod:`fortemi.graph.vocabulary.health`),
        read in one transaction so the report is of one state."""
        async with self._db.memory_transaction(memory, isolation="repeatable_read") as conn:
            concepts = await self._repo.all_concepts(conn)
            labels = await self._repo.all_labels(conn)
            relations = await self._repo.relations(conn)
            counts = await self._repo.note_counts(conn)
        return assess(concepts, labels, relations, counts)

    # -- schemes ---------------------------------------------------------------------------

    async def create_scheme(
        self,
        memory: str,
        *,
        title: str,
        uri: str | None = None,
        description: str | None = None,
        actor: str | None,
    ) -> ConceptScheme:
        scheme = ConceptScheme(
            id=uuid4(),
            uri=check_uri(uri),
            title=check_title(title),
            description=check_text(description, "description"),
            is_default=False,
            created_at=datetime.now(UTC),
            created_by=actor,
        )
        async with self._changing(memory, actor, "scheme_created", scheme.id) as conn:
            await self._free_uri(conn, scheme.uri, scheme.id)
            return await self._repo.insert_scheme(conn, scheme)

    async def update_scheme(
        self,
        memory: str,
        scheme_id: UUID,
        *,
        title: str | None = None,
        uri: str | None = None,
        description: str | None = None,
        actor: str | None,
    ) -> ConceptScheme:
        async with self._changing(memory, actor, "scheme_updated", scheme_id) as conn:
            current = await self._repo.scheme(conn, scheme_id)
            if current is None:
                raise missing("concept scheme", scheme_id)
            changed = replace(
                current,
                title=current.title if title is None else check_title(title),
                uri=current.uri if uri is None else check_uri(uri),
                description=(
                    current.description
                    if description is None
                    else check_text(description, "description")
                ),
            )
            await self._free_uri(conn, changed.uri, scheme_id)
            updated = await self._repo.update_scheme(conn, changed)
            if updated is None:
                raise missing("concept scheme", scheme_id)
            return updated

    async def delete_scheme(self, memory: str, scheme_id: UUID, *, actor: str | None) -> None:
        """Delete a scheme with its concepts, collections and their attachments to notes."""
        async with self._changing(memory, actor, "scheme_deleted", scheme_id) as conn:
            if not await self._repo.delete_scheme(conn, scheme_id):
                raise missing("concept scheme", scheme_id)

    # -- concepts --------------------------------------------------------------------------

    async def create_concept(
        self, memory: str, draft: ConceptDraft, *, actor: str | None
    ) -> Concept:
        """A new ``candidate`` concept with its labels and broader concepts."""
        lang = check_lang(draft.lang)
        pref = check_label(draft.pref_label, "prefLabel")
        alts = [check_label(label, "altLabels") for label in draft.alt_labels]
        hidden = [check_label(label, "hiddenLabels") for label in draft.hidden_labels]
        broader = tuple(dict.fromkeys(draft.broader))
        if len(broader) > MAX_BROADER:
            raise BadUserInput(
                f"A concept has at most {MAX_BROADER} broader concepts",
                field="broader",
                reason="max_broader",
            )
        concept = Concept(
            id=uuid4(),
            scheme_id=draft.scheme_id,
            uri=check_uri(draft.uri),
            notation=check_text(draft.notation, "notation"),
            status="candidate",
            dimension=check_dimension(draft.dimension),
            definition=check_text(draft.definition, "definition"),
            scope_note=check_text(draft.scope_note, "scopeNote"),
            created_at=datetime.now(UTC),
            updated_at=datetime.now(UTC),
            created_by=actor,
        )
        labels = [ConceptLabel(concept.id, "pref", lang, pref)]
        labels += [ConceptLabel(concept.id, "alt", lang, label) for label in alts]
        labels += [ConceptLabel(concept.id, "hidden", lang, label) for label in hidden]
        _disjoint(labels)
        async with self._changing(memory, actor, "concept_created", concept.id) as conn:
            if await self._repo.scheme(conn, draft.scheme_id) is None:
                raise missing("concept scheme", draft.scheme_id)
            await self._free_uri(conn, concept.uri, concept.id)
            await self._free_pref(conn, draft.scheme_id, concept.id, pref, lang)
            known = await self._repo.concepts(conn, broader)
            for parent in broader:
                if parent not in known:
                    raise missing("concept", parent)
                if await self._tags.level(conn, parent) + 1 > MAX_DEPTH:
                    raise BadUserInput(
                        f"Concepts nest at most {MAX_DEPTH} levels deep; {parent} is at "
                        f"level {MAX_DEPTH} already",
                        field="broader",
                        reason="max_depth",
                    )
            created = await self._repo.insert_full_concept(conn, concept)
            await self._repo.insert_labels(conn, labels)
            await self._repo.insert_relations(
                conn,
                [
                    ConceptRelation(concept.id, parent, "broader", None, actor, concept.created_at)
                    for parent in broader
                ],
            )
            return created

    async def update_concept(
        self, memory: str, concept_id: UUID, change: ConceptChange, *, actor: str | None
    ) -> Concept:
        async with self._changing(memory, actor, "concept_updated", concept_id) as conn:
            current = await self._concept(conn, concept_id)
            status = current.status if change.status is None else check_status(change.status)
            if status == "controlled" and current.status != "controlled":
                notes = await self._repo.live_note_count(conn, concept_id)
                if notes < LITERARY_WARRANT:
                    raise Conflict(
                        f"A concept becomes controlled with {LITERARY_WARRANT} notes or more "
                        f"(literary warrant); this one has {notes}",
                        reason="literary_warrant",
                        notes=notes,
                    )
            dimension = current.dimension
            if change.clear_dimension:
                dimension = None
            elif change.dimension is not None:
                dimension = check_dimension(change.dimension)
            changed = replace(
                current,
                status=status,
                dimension=dimension,
                definition=_text(current.definition, change.definition, "definition"),
                scope_note=_text(current.scope_note, change.scope_note, "scopeNote"),
                notation=_text(current.notation, change.notation, "notation"),
                uri=current.uri if change.uri is None else check_uri(change.uri),
            )
            await self._free_uri(conn, changed.uri, concept_id)
            updated = await self._repo.update_concept(conn, changed)
            if updated is None:
                raise missing("concept", concept_id)
            return updated

    async def delete_concept(self, memory: str, concept_id: UUID, *, actor: str | None) -> None:
        """Delete a concept, its labels, relations, memberships and note attachments; its
        narrower concepts lose that broader link (prefer deprecating a concept in use)."""
        async with self._changing(memory, actor, "concept_deleted", concept_id) as conn:
            if not await self._repo.delete_concept(conn, concept_id):
                raise missing("concept", concept_id)

    async def add_label(
        self,
        memory: str,
        concept_id: UUID,
        *,
        kind: str,
        label: str,
        lang: str = "",
        actor: str | None,
    ) -> list[ConceptLabel]:
        """Add a label (a pref label replaces the concept's pref label in that language);
        the concept's labels after the change."""
        new = ConceptLabel(concept_id, check_kind(kind), check_lang(lang), check_label(label))
        async with self._changing(memory, actor, "concept_updated", concept_id) as conn:
            concept = await self._concept(conn, concept_id)
            labels = (await self._repo.labels(conn, [concept_id])).get(concept_id, [])
            same = [
                old
                for old in labels
                if old.lang == new.lang and old.label.lower() == new.label.lower()
            ]
            if any(old.kind != new.kind for old in same):
                raise Conflict(
                    f"{new.label!r} is already a {same[0].kind} label of this concept; a "
                    "label is pref, alt or hidden, never two of them (remove it first)",
                    reason="label_kinds_overlap",
                )
            if new.kind == "pref":
                await self._free_pref(conn, concept.scheme_id, concept_id, new.label, new.lang)
                await self._repo.delete_pref(conn, concept_id, new.lang)
            await self._repo.insert_labels(conn, [new])
            await self._repo.touch_concept(conn, concept_id)
            return (await self._repo.labels(conn, [concept_id])).get(concept_id, [])

    async def remove_label(
        self,
        memory: str,
        concept_id: UUID,
        *,
        kind: str,
        label: str,
        lang: str = "",
        actor: str | None,
    ) -> list[ConceptLabel]:
        gone = ConceptLabel(concept_id, check_kind(kind), check_lang(lang), check_label(label))
        async with self._changing(memory, actor, "concept_updated", concept_id) as conn:
            await self._concept(conn, concept_id)
            labels = (await self._repo.labels(conn, [concept_id])).get(concept_id, [])
            prefs = [old for old in labels if old.kind == "pref"]
            if gone.kind == "pref" and len(prefs) == 1 and prefs[0].lang == gone.lang:
                raise Conflict(
                    "A concept keeps at least one preferred label; add another first",
                    reason="last_pref_label",
                )
            if not await self._repo.delete_label(conn, gone):
                raise NotFound(
                    f"The concept has no {gone.kind} label {gone.label!r}"
                    + (f" in {gone.lang!r}" if gone.lang else ""),
                    id=str(concept_id),
                )
            await self._repo.touch_concept(conn, concept_id)
            return (await self._repo.labels(conn, [concept_id])).get(concept_id, [])

    # -- relations -------------------------------------------------------------------------

    async def add_broader(
        self, memory: str, concept_id: UUID, broader_id: UUID, *, actor: str | None
    ) -> None:
        if concept_id == broader_id:
            raise BadUserInput("A concept cannot be broader than itself", reason="cycle")
        async with self._changing(memory, actor, "concept_updated", concept_id) as conn:
            await self._both(conn, concept_id, broader_id)
            if await self._related(conn, concept_id, broader_id):
                raise Conflict(
                    "These concepts are related; SKOS keeps related and broader apart "
                    "(remove the related link first)",
                    reason="related_and_broader",
                )
            problem = await wiring_problem(self._tags, conn, concept_id, broader_id)
            if problem is not None:
                raise BadUserInput(problem.message, field="broader", reason=problem.code)
            await self._tags.add_broader(conn, concept_id, broader_id, actor)

    async def remove_broader(
        self, memory: str, concept_id: UUID, broader_id: UUID, *, actor: str | None
    ) -> None:
        async with self._changing(memory, actor, "concept_updated", concept_id) as conn:
            if not await self._repo.delete_relation(conn, "broader", concept_id, broader_id):
                raise NotFound(f"{broader_id} is not a broader concept of {concept_id}")

    async def relate(
        self,
        memory: str,
        a: UUID,
        b: UUID,
        *,
        confidence: float | None = None,
        actor: str | None,
    ) -> None:
        """``a`` related ``b`` (both rows); repeating is a no-op."""
        if a == b:
            raise BadUserInput("A concept cannot be related to itself", field="related")
        score = None if confidence is None else check_confidence(confidence)
        async with self._changing(memory, actor, "concept_updated", a) as conn:
            await self._both(conn, a, b)
            if await self._tags.is_ancestor(conn, a, b) or await self._tags.is_ancestor(conn, b, a):
                raise Conflict(
                    "One of these concepts is broader than the other; SKOS keeps related "
                    "and broader apart",
                    reason="related_and_broader",
                )
            at = datetime.now(UTC)
            await self._repo.insert_relations(
                conn,
                [
                    ConceptRelation(a, b, "related", score, actor, at),
                    ConceptRelation(b, a, "related", score, actor, at),
                ],
            )

    async def unrelate(self, memory: str, a: UUID, b: UUID, *, actor: str | None) -> None:
        async with self._changing(memory, actor, "concept_updated", a) as conn:
            if not await self._repo.delete_relation(conn, "related", a, b):
                raise NotFound(f"{a} and {b} are not related")

    # -- helpers ---------------------------------------------------------------------------

    async def _concept(self, conn: Connection, concept_id: UUID) -> Concept:
        found = (await self._repo.concepts(conn, [concept_id])).get(concept_id)
        if found is None:
            raise missing("concept", concept_id)
        return found

    async def _both(self, conn: Connection, a: UUID, b: UUID) -> None:
        found = await self._repo.concepts(conn, [a, b])
        for ident in (a, b):
            if ident not in found:
                raise missing("concept", ident)

    async def _related(self, conn: Connection, a: UUID, b: UUID) -> bool:
        return any(
            r.kind == "related" and {r.source_id, r.target_id} == {a, b}
            for r in await self._repo.relations(conn, [a])
        )

    async def _free_pref(
        self, conn: Connection, scheme_id: UUID, own_id: UUID, label: str, lang: str
    ) -> None:
        other = await pref_taken(conn, scheme_id, own_id, label, lang)
        if other is not None:
            raise Conflict(
                f"Concept {other} of this scheme already has the preferred label {label!r}; "
                "add it as an alternative label there, or choose another label",
                reason="pref_label_taken",
                concept_id=str(other),
            )


def _disjoint(labels: Sequence[ConceptLabel]) -> None:
    seen: dict[tuple[str, str], str] = {}
    for label in labels:
        key = (label.lang, label.label.lower())
        if key in seen and seen[key] != label.kind:
            raise BadUserInput(
                f"{label.label!r} cannot be both a {seen[key]} and a {label.kind} label",
                field="labels",
            )
        seen[key] = label.kind


def _text(current: str | None, given: str | None, field: str) -> str | None:
    return current if given is None else check_text(given, field)
