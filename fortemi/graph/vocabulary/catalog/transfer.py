"""SKOS Turtle import and export of a memory's vocabulary (see
:mod:`fortemi.graph.vocabulary.skos` for what round-trips).

Import parses and checks everything before its one transaction, then writes the whole
vocabulary in it, or nothing: a parse error, a broken invariant or a URI the memory already
holds leaves the memory as it was. Export reads one consistent state (repeatable read).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from fortemi.graph.events import graph_event
from fortemi.graph.vocabulary.catalog.repository import GovernanceRepository
from fortemi.graph.vocabulary.models import ConceptScheme
from fortemi.graph.vocabulary.repository import VocabularyRepository
from fortemi.graph.vocabulary.skos import VocabularySnapshot, from_turtle, to_turtle
from fortemi.graph.vocabulary.validation import check_title
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.events import EventBus

__all__ = ["ImportResult", "SkosTransfer"]


@dataclass(frozen=True, slots=True)
class ImportResult:
    schemes: list[ConceptScheme]
    concepts: int
    labels: int
    relations: int  # broader links, and related pairs counted once
    collections: int


class SkosTransfer:
    def __init__(self, db: Database, *, events: EventBus | None = None) -> None:
        self._db = db
        self._events = events
        self._repo = GovernanceRepository()
        self._lock = VocabularyRepository()

    async def import_turtle(
        self,
        memory: str,
        turtle: str,
        *,
        fallback_title: str | None = None,
        actor: str | None,
    ) -> ImportResult:
        """Import a SKOS vocabulary. Concepts that name no scheme go to a new scheme titled
        ``fallback_title`` (or the file's only scheme). BadUserInput for bad Turtle (with
        its line) or a broken invariant; Conflict when a URI is already in the memory."""
        if not isinstance(turtle, str) or not turtle.strip():
            raise BadUserInput("turtle must be a non-empty Turtle document", field="turtle")
        title = check_title(fallback_title or "Imported vocabulary", "schemeTitle")
        snapshot = from_turtle(turtle, fallback_title=title, actor=actor)
        uris = [
            uri
            for uri in (
                *(s.uri for s in snapshot.schemes),
                *(c.uri for c in snapshot.concepts),
                *(c.uri for c in snapshot.collections),
            )
            if uri is not None
        ]
        async with self._db.memory_transaction(memory, subject="The vocabulary") as conn:
            await self._lock.lock(conn)
            taken = await self._repo.uris_taken(conn, uris)
            if taken:
                raise Conflict(
                    f"This memory already holds {', '.join(taken)}; delete that scheme first "
                    "or import into another memory",
                    reason="uri_taken",
                    uris=taken,
                )
            await self._repo.insert_snapshot(
                conn,
                snapshot.schemes,
                snapshot.concepts,
                snapshot.labels,
                snapshot.notes,
                snapshot.relations,
                snapshot.collections,
            )
            schemes = [
                s
                for s in await self._repo.schemes(conn)
                if s.id in {x.id for x in snapshot.schemes}
            ]
        result = ImportResult(
            schemes=schemes,
            concepts=len(snapshot.concepts),
            labels=len(snapshot.labels),
            relations=sum(1 for r in snapshot.relations if r.kind == "broader")
            + sum(1 for r in snapshot.relations if r.kind == "related") // 2,
            collections=len(snapshot.collections),
        )
        if self._events is not None:
            payload = {
                "action": "imported",
                "schemes": [str(s.id) for s in schemes],
                "concepts": result.concepts,
            }
            await self._events.publish(graph_event("vocabulary_changed", memory, actor, payload))
        return result

    async def snapshot(self, memory: str, scheme_id: UUID | None = None) -> VocabularySnapshot:
        """The vocabulary (or one scheme of it) as the model holds it."""
        async with self._db.memory_transaction(memory, isolation="repeatable_read") as conn:
            schemes = await self._repo.schemes(conn)
            if scheme_id is not None:
                schemes = [s for s in schemes if s.id == scheme_id]
                if not schemes:
                    raise NotFound(
                        f"No concept scheme {scheme_id} in this memory", id=str(scheme_id)
                    )
            wanted = {s.id for s in schemes}
            concepts = [c for c in await self._repo.all_concepts(conn) if c.scheme_id in wanted]
            ids = [c.id for c in concepts]
            labels = await self._repo.labels(conn, ids)
            notes = await self._repo.notes(conn, ids)
            relations = await self._repo.relations(conn, ids)
            collections = await self._repo.collections(conn, scheme_id)
        inside = set(ids)
        return VocabularySnapshot(
            schemes=schemes,
            concepts=concepts,
            labels=[label for c in concepts for label in labels.get(c.id, [])],
            notes=notes,
            relations=[r for r in relations if r.source_id in inside],
            collections=collections,
        )

    async def export_turtle(self, memory: str, scheme_id: UUID | None = None) -> str:
        """The vocabulary (or one scheme) as SKOS Turtle."""
        return to_turtle(await self.snapshot(memory, scheme_id))
