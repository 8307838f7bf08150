"""All SQL of vocabulary governance (schemes, concepts, labels, relations, collections),
used by the catalog service and by SKOS import and export.

Same rules as :mod:`fortemi.graph.vocabulary.repository`, whose table declarations these
statements share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from fortemi.graph.vocabulary.models import (
    Collection,
    Concept,
    ConceptLabel,
    ConceptNote,
    ConceptRelation,
    ConceptScheme,
)
from fortemi.graph.vocabulary.repository import CONCEPT, LABEL, RELATION, SCHEME
from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = ["COLLECTION", "CONCEPT_NOTE", "GovernanceRepository", "pref_taken", "uri_taken"]

_INSERT_LABEL = LABEL.insert(suffix="ON CONFLICT DO NOTHING")

COLLECTION = Table("concept_collection", Collection, omit=("members",))

_SCHEMES = SCHEME.query("SELECT {columns} FROM concept_scheme ORDER BY created_at, id")
_SCHEME = SCHEME.query("SELECT {columns} FROM concept_scheme WHERE id = :id")
_INSERT_SCHEME = SCHEME.insert(
    ("id", "uri", "title", "description", "created_by"), suffix="RETURNING {columns}"
)
_UPDATE_SCHEME = SCHEME.query("""
UPDATE concept_scheme SET title = :title, description = :description, uri = :uri
WHERE id = :id RETURNING {columns}
""")
_DELETE_SCHEME = Query("DELETE FROM concept_scheme WHERE id = :id RETURNING id")

_CONCEPTS = CONCEPT.query("SELECT {columns} FROM concept WHERE id = ANY(:ids::uuid[])")
_TOP_CONCEPTS = CONCEPT.query("""
SELECT {c.columns} FROM concept c
WHERE c.scheme_id = :scheme AND NOT EXISTS (
    SELECT 1 FROM concept_relation r WHERE r.source_id = c.id AND r.kind = 'broader')
ORDER BY c.created_at, c.id
""")
_CONCEPTS_OF_SCHEMES = CONCEPT.query(
    "SELECT {columns} FROM concept WHERE scheme_id = ANY(:ids::uuid[]) ORDER BY created_at, id"
)
# A page of concepts, newest first, filtered by scheme, status and a label prefix (folded).
_LIST_CONCEPTS = CONCEPT.query("""
SELECT {c.columns} FROM concept c
WHERE (:scheme::uuid IS NULL OR c.scheme_id = :scheme::uuid)
  AND (:status::text IS NULL OR c.status = :status::text)
  AND (:prefix::text IS NULL OR EXISTS (
        SELECT 1 FROM concept_label l WHERE l.concept_id = c.id
        AND starts_with(l.key, :prefix::text)))
  AND (:after_at::timestamptz IS NULL
       OR (c.created_at, c.id) < (:after_at::timestamptz, :after_id::uuid))
ORDER BY c.created_at DESC, c.id DESC
LIMIT :limit
""")
_INSERT_FULL_CONCEPT = CONCEPT.insert(
    (
        "id",
        "scheme_id",
        "uri",
        "notation",
        "status",
        "dimension",
        "definition",
        "scope_note",
        "created_by",
    ),
    suffix="RETURNING {columns}",
)
_UPDATE_CONCEPT = CONCEPT.query("""
UPDATE concept SET status = :status, dimension = :dimension, definition = :definition,
       scope_note = :scope_note, notation = :notation, uri = :uri,
       updated_at = clock_timestamp()
WHERE id = :id RETURNING {columns}
""")
_TOUCH_CONCEPT = Query("UPDATE concept SET updated_at = clock_timestamp() WHERE id = :id")
_DELETE_CONCEPT = Query("DELETE FROM concept WHERE id = :id RETURNING id")
_LIVE_NOTE_COUNT = Query("""
SELECT count(*) FROM note_concept nc JOIN note n ON n.id = nc.note_id
WHERE nc.concept_id = :id AND n.deleted_at IS NULL
""")

_LABELS = LABEL.query(
    "SELECT {columns} FROM concept_label WHERE concept_id = ANY(:ids::uuid[]) "
    "ORDER BY concept_id, kind DESC, lang, key"
)
_DELETE_LABEL = Query(
    "DELETE FROM concept_label WHERE concept_id = :id AND kind = :kind AND lang = :lang "
    "AND key = lower(:label) RETURNING label"
)
_DELETE_PREF = Query(
    "DELETE FROM concept_label WHERE concept_id = :id AND kind = 'pref' AND lang = :lang"
)

_RELATIONS = RELATION.query("""
SELECT {columns} FROM concept_relation
WHERE (source_id = ANY(:ids::uuid[]) OR target_id = ANY(:ids::uuid[]))
ORDER BY created_at, source_id, target_id
""")
_ALL_RELATIONS = RELATION.query(
    "SELECT {columns} FROM concept_relation ORDER BY created_at, source_id, target_id"
)
_DELETE_RELATION = Query("""
DELETE FROM concept_relation
WHERE kind = :kind AND ((source_id = :a AND target_id = :b)
      OR (:kind = 'related' AND source_id = :b AND target_id = :a))
RETURNING source_id
""")
_INSERT_RELATION = RELATION.insert(
    ("source_id", "target_id", "kind", "confidence", "created_by"),
    suffix="ON CONFLICT DO NOTHING",
)

_COLLECTIONS = COLLECTION.query("""
SELECT {columns} FROM concept_collection
WHERE (:scheme::uuid IS NULL OR scheme_id = :scheme::uuid)
ORDER BY created_at, id
""")
_COLLECTION = COLLECTION.query("SELECT {columns} FROM concept_collection WHERE id = :id")
_INSERT_COLLECTION = COLLECTION.insert(suffix="RETURNING {columns}")
_DELETE_COLLECTION = Query("DELETE FROM concept_collection WHERE id = :id RETURNING id")
_MEMBERS = Query("""
SELECT collection_id, concept_id FROM concept_collection_member
WHERE collection_id = ANY(:ids::uuid[]) ORDER BY collection_id, position, concept_id
""")
_CLEAR_MEMBERS = Query("DELETE FROM concept_collection_member WHERE collection_id = :id")
_INSERT_MEMBERS = Query("""
INSERT INTO concept_collection_member (collection_id, concept_id, position)
SELECT :id, m, p - 1 FROM unnest(:members::uuid[]) WITH ORDINALITY AS t(m, p)
""")


_ALL_CONCEPTS = CONCEPT.query("SELECT {columns} FROM concept ORDER BY created_at, id")
_ALL_LABELS = LABEL.query(
    "SELECT {columns} FROM concept_label ORDER BY concept_id, kind DESC, lang, key"
)
_NOTE_COUNTS = Query("""
SELECT nc.concept_id, count(*) AS notes FROM note_concept nc JOIN note n ON n.id = nc.note_id
WHERE n.deleted_at IS NULL GROUP BY nc.concept_id
""")


CONCEPT_NOTE = Table("concept_note", ConceptNote)
_NOTES = CONCEPT_NOTE.query(
    "SELECT {columns} FROM concept_note WHERE concept_id = ANY(:ids::uuid[]) "
    "ORDER BY concept_id, kind, lang"
)
_INSERT_NOTE = CONCEPT_NOTE.insert()
_INSERT_SCHEME_ROW = SCHEME.insert(("id", "uri", "title", "description", "created_by"))
_INSERT_CONCEPT_ROW = CONCEPT.insert(
    (
        "id",
        "scheme_id",
        "uri",
        "notation",
        "status",
        "dimension",
        "definition",
        "scope_note",
        "created_by",
    )
)
_URIS_TAKEN = Query("""
SELECT uri FROM concept_scheme WHERE uri = ANY(:uris::text[])
UNION SELECT uri FROM concept WHERE uri = ANY(:uris::text[])
UNION SELECT uri FROM concept_collection WHERE uri = ANY(:uris::text[])
ORDER BY 1 LIMIT 5
""")


class GovernanceRepository:
    """The SQL of vocabulary governance and of SKOS import and export."""

    async def notes(self, conn: Connection, ids: Sequence[UUID]) -> list[ConceptNote]:
        return CONCEPT_NOTE.from_records(await conn.fetch(_NOTES.sql, *_NOTES.args(ids=list(ids))))

    async def uris_taken(self, conn: Connection, uris: Sequence[str]) -> list[str]:
        """Up to five of ``uris`` that a scheme, concept or collection already has."""
        rows = await conn.fetch(_URIS_TAKEN.sql, *_URIS_TAKEN.args(uris=list(uris)))
        return [row["uri"] for row in rows]

    async def insert_snapshot(
        self,
        conn: Connection,
        schemes: Sequence[ConceptScheme],
        concepts: Sequence[Concept],
        labels: Sequence[ConceptLabel],
        notes: Sequence[ConceptNote],
        relations: Sequence[ConceptRelation],
        collections: Sequence[Collection],
    ) -> None:
        """Write a whole vocabulary (an import), a statement per table and kind of row."""
        if schemes:
            await conn.executemany(
                _INSERT_SCHEME_ROW.sql,
                [
                    _INSERT_SCHEME_ROW.args(_only(SCHEME.binds(s), _INSERT_SCHEME_ROW))
                    for s in schemes
                ],
            )
        if concepts:
            await conn.executemany(
                _INSERT_CONCEPT_ROW.sql,
                [
                    _INSERT_CONCEPT_ROW.args(_only(CONCEPT.binds(c), _INSERT_CONCEPT_ROW))
                    for c in concepts
                ],
            )
        await self.insert_labels(conn, labels)
        if notes:
            await conn.executemany(
                _INSERT_NOTE.sql, [_INSERT_NOTE.args(CONCEPT_NOTE.binds(n)) for n in notes]
            )
        await self.insert_relations(conn, relations)
        for collection in collections:
            await self.insert_collection(conn, collection)

    async def all_concepts(self, conn: Connection) -> list[Concept]:
        return CONCEPT.from_records(await conn.fetch(_ALL_CONCEPTS.sql))

    async def all_labels(self, conn: Connection) -> dict[UUID, list[ConceptLabel]]:
        found: dict[UUID, list[ConceptLabel]] = {}
        for row in await conn.fetch(_ALL_LABELS.sql):
            found.setdefault(row["concept_id"], []).append(LABEL.from_record(row))
        return found

    async def note_counts(self, conn: Connection) -> dict[UUID, int]:
        """Live notes per concept (concepts without any are absent)."""
        return {row["concept_id"]: row["notes"] for row in await conn.fetch(_NOTE_COUNTS.sql)}

    async def schemes(self, conn: Connection) -> list[ConceptScheme]:
        return SCHEME.from_records(await conn.fetch(_SCHEMES.sql))

    async def scheme(self, conn: Connection, scheme_id: UUID) -> ConceptScheme | None:
        row = await conn.fetchrow(_SCHEME.sql, *_SCHEME.args(id=scheme_id))
        return None if row is None else SCHEME.from_record(row)

    async def insert_scheme(self, conn: Connection, scheme: ConceptScheme) -> ConceptScheme:
        args = _INSERT_SCHEME.args(
            id=scheme.id,
            uri=scheme.uri,
            title=scheme.title,
            description=scheme.description,
            created_by=scheme.created_by,
        )
        return SCHEME.from_record(await conn.fetchrow(_INSERT_SCHEME.sql, *args))  # type: ignore[arg-type]

    async def update_scheme(self, conn: Connection, scheme: ConceptScheme) -> ConceptScheme | None:
        args = _UPDATE_SCHEME.args(
            id=scheme.id, title=scheme.title, description=scheme.description, uri=scheme.uri
        )
        row = await conn.fetchrow(_UPDATE_SCHEME.sql, *args)
        return None if row is None else SCHEME.from_record(row)

    async def delete_scheme(self, conn: Connection, scheme_id: UUID) -> bool:
        return (
            await conn.fetchval(_DELETE_SCHEME.sql, *_DELETE_SCHEME.args(id=scheme_id)) is not None
        )

    async def concepts(self, conn: Connection, ids: Sequence[UUID]) -> dict[UUID, Concept]:
        rows = await conn.fetch(_CONCEPTS.sql, *_CONCEPTS.args(ids=list(ids)))
        return {row["id"]: CONCEPT.from_record(row) for row in rows}

    async def top_concepts(self, conn: Connection, scheme_id: UUID) -> list[Concept]:
        """The scheme's concepts that have no broader concept, oldest first."""
        rows = await conn.fetch(_TOP_CONCEPTS.sql, *_TOP_CONCEPTS.args(scheme=scheme_id))
        return CONCEPT.from_records(rows)

    async def concepts_of_schemes(self, conn: Connection, ids: Sequence[UUID]) -> list[Concept]:
        rows = await conn.fetch(_CONCEPTS_OF_SCHEMES.sql, *_CONCEPTS_OF_SCHEMES.args(ids=list(ids)))
        return CONCEPT.from_records(rows)

    async def list_concepts(
        self,
        conn: Connection,
        *,
        scheme_id: UUID | None,
        status: str | None,
        prefix: str | None,
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> list[Concept]:
        args = _LIST_CONCEPTS.args(
            scheme=scheme_id,
            status=status,
            prefix=prefix,
            after_at=None if after is None else after[0],
            after_id=None if after is None else after[1],
            limit=limit,
        )
        return CONCEPT.from_records(await conn.fetch(_LIST_CONCEPTS.sql, *args))

    async def insert_full_concept(self, conn: Connection, concept: Concept) -> Concept:
        values = CONCEPT.binds(concept)
        args = _INSERT_FULL_CONCEPT.args(
            {name: values[name] for name in _INSERT_FULL_CONCEPT.names}
        )
        return CONCEPT.from_record(await conn.fetchrow(_INSERT_FULL_CONCEPT.sql, *args))  # type: ignore[arg-type]

    async def update_concept(self, conn: Connection, concept: Concept) -> Concept | None:
        values = CONCEPT.binds(concept)
        args = _UPDATE_CONCEPT.args({name: values[name] for name in _UPDATE_CONCEPT.names})
        row = await conn.fetchrow(_UPDATE_CONCEPT.sql, *args)
        return None if row is None else CONCEPT.from_record(row)

    async def touch_concept(self, conn: Connection, concept_id: UUID) -> None:
        await conn.execute(_TOUCH_CONCEPT.sql, *_TOUCH_CONCEPT.args(id=concept_id))

    async def delete_concept(self, conn: Connection, concept_id: UUID) -> bool:
        deleted = await conn.fetchval(_DELETE_CONCEPT.sql, *_DELETE_CONCEPT.args(id=concept_id))
        return deleted is not None

    async def live_note_count(self, conn: Connection, concept_id: UUID) -> int:
        count: int = await conn.fetchval(
            _LIVE_NOTE_COUNT.sql, *_LIVE_NOTE_COUNT.args(id=concept_id)
        )
        return count

    async def labels(self, conn: Connection, ids: Sequence[UUID]) -> dict[UUID, list[ConceptLabel]]:
        found: dict[UUID, list[ConceptLabel]] = {}
        for row in await conn.fetch(_LABELS.sql, *_LABELS.args(ids=list(ids))):
            found.setdefault(row["concept_id"], []).append(LABEL.from_record(row))
        return found

    async def delete_label(self, conn: Connection, label: ConceptLabel) -> bool:
        args = _DELETE_LABEL.args(
            id=label.concept_id, kind=label.kind, lang=label.lang, label=label.label
        )
        return await conn.fetchval(_DELETE_LABEL.sql, *args) is not None

    async def delete_pref(self, conn: Connection, concept_id: UUID, lang: str) -> None:
        await conn.execute(_DELETE_PREF.sql, *_DELETE_PREF.args(id=concept_id, lang=lang))

    async def relations(
        self, conn: Connection, ids: Sequence[UUID] | None = None
    ) -> list[ConceptRelation]:
        """The relations touching ``ids``, or every relation of the memory."""
        if ids is None:
            return RELATION.from_records(await conn.fetch(_ALL_RELATIONS.sql))
        rows = await conn.fetch(_RELATIONS.sql, *_RELATIONS.args(ids=list(ids)))
        return RELATION.from_records(rows)

    async def insert_relations(
        self, conn: Connection, relations: Sequence[ConceptRelation]
    ) -> None:
        if relations:
            await conn.executemany(
                _INSERT_RELATION.sql,
                [
                    _INSERT_RELATION.args(
                        source_id=r.source_id,
                        target_id=r.target_id,
                        kind=r.kind,
                        confidence=r.confidence,
                        created_by=r.created_by,
                    )
                    for r in relations
                ],
            )

    async def delete_relation(self, conn: Connection, kind: str, a: UUID, b: UUID) -> bool:
        rows = await conn.fetch(_DELETE_RELATION.sql, *_DELETE_RELATION.args(kind=kind, a=a, b=b))
        return bool(rows)

    async def insert_labels(self, conn: Connection, labels: Sequence[ConceptLabel]) -> None:
        if labels:
            await conn.executemany(
                _INSERT_LABEL.sql, [_INSERT_LABEL.args(LABEL.binds(label)) for label in labels]
            )

    async def collections(self, conn: Connection, scheme_id: UUID | None) -> list[Collection]:
        rows = await conn.fetch(_COLLECTIONS.sql, *_COLLECTIONS.args(scheme=scheme_id))
        return await self._with_members(conn, COLLECTION.from_records(rows))

    async def collection(self, conn: Connection, collection_id: UUID) -> Collection | None:
        row = await conn.fetchrow(_COLLECTION.sql, *_COLLECTION.args(id=collection_id))
        if row is None:
            return None
        return (await self._with_members(conn, [COLLECTION.from_record(row)]))[0]

    async def _with_members(self, conn: Connection, found: list[Collection]) -> list[Collection]:
        rows = await conn.fetch(_MEMBERS.sql, *_MEMBERS.args(ids=[c.id for c in found]))
        members: dict[UUID, list[UUID]] = {}
        for row in rows:
            members.setdefault(row["collection_id"], []).append(row["concept_id"])
        return [replace(c, members=tuple(members.get(c.id, ()))) for c in found]

    async def insert_collection(self, conn: Connection, collection: Collection) -> None:
        await conn.execute(
            _INSERT_COLLECTION.sql, *_INSERT_COLLECTION.args(COLLECTION.binds(collection))
        )
        await self.set_members(conn, collection.id, collection.members)

    async def set_members(
        self, conn: Connection, collection_id: UUID, members: Sequence[UUID]
    ) -> None:
        await conn.execute(_CLEAR_MEMBERS.sql, *_CLEAR_MEMBERS.args(id=collection_id))
        if members:
            args = _INSERT_MEMBERS.args(id=collection_id, members=list(members))
            await conn.execute(_INSERT_MEMBERS.sql, *args)

    async def delete_collection(self, conn: Connection, collection_id: UUID) -> bool:
        args = _DELETE_COLLECTION.args(id=collection_id)
        return await conn.fetchval(_DELETE_COLLECTION.sql, *args) is not None


_URI_TAKEN = Query("""
SELECT EXISTS (SELECT 1 FROM concept_scheme WHERE uri = :uri AND id <> :id)
    OR EXISTS (SELECT 1 FROM concept WHERE uri = :uri AND id <> :id)
    OR EXISTS (SELECT 1 FROM concept_collection WHERE uri = :uri AND id <> :id)
""")
# Concepts of ``scheme`` (other than ``id``) with the same preferred label in ``lang``.
_PREF_TAKEN = Query("""
SELECT c.id FROM concept c JOIN concept_label l ON l.concept_id = c.id
WHERE c.scheme_id = :scheme AND c.id <> :id AND l.kind = 'pref' AND l.lang = :lang
  AND l.key = lower(:label)
LIMIT 1
""")


async def uri_taken(conn: Connection, uri: str, own_id: UUID) -> bool:
    """Whether another scheme, concept or collection of the memory has ``uri``."""
    return bool(await conn.fetchval(_URI_TAKEN.sql, *_URI_TAKEN.args(uri=uri, id=own_id)))


async def pref_taken(
    conn: Connection, scheme_id: UUID, own_id: UUID, label: str, lang: str
) -> UUID | None:
    args = _PREF_TAKEN.args(scheme=scheme_id, id=own_id, label=label, lang=lang)
    found: UUID | None = await conn.fetchval(_PREF_TAKEN.sql, *args)
    return found


def _only(values: dict[str, object], query: Query) -> dict[str, object]:
    """The bind values ``query`` names, of a model's full set."""
    return {name: values[name] for name in query.names}
