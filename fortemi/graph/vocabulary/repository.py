"""All SQL of the vocabulary: schemes, concepts, labels, relations, collections, and the
concepts attached to notes.

Every method takes a connection inside ``Database.memory_transaction`` (unqualified table
names are the memory's). Values always travel as binds; columns are declared once, below,
from the models. Hierarchy walks are recursive CTEs bounded at 32 levels so a
corrupt (cyclic) hierarchy can never make one run forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from fortemi.graph.vocabulary.models import (
    Concept,
    ConceptLabel,
    ConceptRelation,
    ConceptScheme,
    Cooccurrence,
    NoteConcept,
)
from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = [
    "CONCEPT",
    "CONCEPT_LABELS_SQL",
    "LABEL",
    "NOTE_CONCEPTS_SQL",
    "PREF_LABEL_SQL",
    "RELATION",
    "SCHEME",
    "VocabularyRepository",
]

SCHEME = Table("concept_scheme", ConceptScheme)
CONCEPT = Table("concept", Concept)
LABEL = Table("concept_label", ConceptLabel)
RELATION = Table("concept_relation", ConceptRelation)
NOTE_CONCEPT = Table("note_concept", NoteConcept)


# The preferred label of concept ``c``: language-neutral first, then English, then the
# first language in order; a concept without one (only possible through a bug) shows its id.
PREF_LABEL_SQL = (
    "coalesce((SELECT pl.label FROM concept_label pl WHERE pl.concept_id = c.id AND pl.kind"
    " = 'pref' ORDER BY pl.lang <> '', pl.lang <> 'en', pl.lang LIMIT 1), c.id::text)"
)

# The concepts on the notes of the uuid[] expression ``{ids}`` and the preferred labels of
# those concepts, as two subqueries answering one row of arrays each, for a statement of
# another part of the graph to read in its own round trip (the traversal's walk splices
# them in): ``concept_notes``/``concept_ids`` pair up (a note per concept it carries, by
# note then concept), ``label_ids``/``labels`` give each concept's preferred label.
NOTE_CONCEPTS_SQL = """
SELECT array_agg(nc.note_id ORDER BY nc.note_id, nc.concept_id) AS concept_notes,
       array_agg(nc.concept_id ORDER BY nc.note_id, nc.concept_id) AS concept_ids
FROM note_concept nc WHERE nc.note_id = ANY({ids})
"""
CONCEPT_LABELS_SQL = """
SELECT array_agg(c.id ORDER BY c.id) AS label_ids,
       array_agg({pref} ORDER BY c.id) AS labels
FROM concept c
WHERE c.id IN (SELECT nc.concept_id FROM note_concept nc WHERE nc.note_id = ANY({ids}))
""".replace("{pref}", PREF_LABEL_SQL)

# Serialises every vocabulary write of one memory: creating concepts by label must not race
# (two taggers would each create "ml"), and hierarchy limits are checked then written.
# Two-int4 key space (schema, fixed tag), apart from the migrations' bigint locks.
_LOCK = Query("SELECT pg_advisory_xact_lock(hashtext(current_schema()), hashtext('vocabulary'))")

_DEFAULT_SCHEME = Query("SELECT id FROM concept_scheme WHERE is_default")
_CREATE_DEFAULT_SCHEME = Query("""
INSERT INTO concept_scheme (id, title, description, is_default, created_by)
VALUES (:id, 'Tags', 'Concepts created from path tags and by concept tagging', true, :actor)
ON CONFLICT (is_default) WHERE is_default DO NOTHING
""")

# A live note, key-share locked so it cannot be purged before our rows reference it; a
# KEY SHARE lock does not block edits of the note itself.
_LIVE_NOTE = Query("SELECT deleted_at IS NULL FROM note WHERE id = :id FOR KEY SHARE")

# Non-deprecated concepts having a label whose folded form is one of :keys.
_BY_KEY = Query("""
SELECT DISTINCT ON (l.key, c.id) l.key, c.id, c.created_at
FROM concept_label l JOIN concept c ON c.id = l.concept_id
WHERE l.key = ANY(:keys::text[]) AND c.status <> 'deprecated'
ORDER BY l.key, c.id
""")

_NARROWER_BY_KEY = Query("""
SELECT c.id
FROM concept_relation r
JOIN concept c ON c.id = r.source_id
JOIN concept_label l ON l.concept_id = c.id
WHERE r.kind = 'broader' AND r.target_id = :parent AND l.key = :key
  AND c.status <> 'deprecated'
ORDER BY c.created_at, c.id
LIMIT 1
""")

_BROADER_COUNT = Query(
    "SELECT count(*) FROM concept_relation WHERE source_id = :id AND kind = 'broader'"
)

# Level of a concept: 1 for a top concept, else 1 + the deepest broader's level.
_LEVEL = Query("""
WITH RECURSIVE up(id, level) AS (
    SELECT :id::uuid, 1
    UNION
    SELECT r.target_id, up.level + 1
    FROM up JOIN concept_relation r ON r.source_id = up.id AND r.kind = 'broader'
    WHERE up.level < 32
)
SELECT max(level) FROM up
""")

# Height: 1 for a concept without narrower ones, else 1 + the tallest narrower's.
_HEIGHT = Query("""
WITH RECURSIVE down(id, level) AS (
    SELECT :id::uuid, 1
    UNION
    SELECT r.source_id, down.level + 1
    FROM down JOIN concept_relation r ON r.target_id = down.id AND r.kind = 'broader'
    WHERE down.level < 32
)
SELECT max(level) FROM down
""")

# Whether :ancestor is :id itself or one of its broader concepts, transitively.
_IS_ANCESTOR = Query("""
WITH RECURSIVE up(id, level) AS (
    SELECT :id::uuid, 0
    UNION
    SELECT r.target_id, up.level + 1
    FROM up JOIN concept_relation r ON r.source_id = up.id AND r.kind = 'broader'
    WHERE up.level < 32
)
SELECT EXISTS (SELECT 1 FROM up WHERE id = :ancestor)
""")

_DESCENDANTS = Query("""
WITH RECURSIVE down(id, level) AS (
    SELECT id, 0 FROM concept WHERE id = ANY(:ids::uuid[])
    UNION
    SELECT r.source_id, down.level + 1
    FROM down JOIN concept_relation r ON r.target_id = down.id AND r.kind = 'broader'
    WHERE down.level < 32
)
SELECT DISTINCT id FROM down
""")

# Per concept of :ids, the live notes carrying it or any narrower concept: the notes whose
# concept paths show it.
_NOTES_UNDER = Query("""
WITH RECURSIVE down(root, id, level) AS (
    SELECT id, id, 0 FROM concept WHERE id = ANY(:ids::uuid[])
    UNION
    SELECT down.root, r.source_id, down.level + 1
    FROM down JOIN concept_relation r ON r.target_id = down.id AND r.kind = 'broader'
    WHERE down.level < 32
)
SELECT down.root AS id, count(DISTINCT nc.note_id) AS notes
FROM down JOIN note_concept nc ON nc.concept_id = down.id
JOIN note n ON n.id = nc.note_id AND n.deleted_at IS NULL
GROUP BY down.root
""")
_LIVE_NOTES = Query("SELECT count(*) FROM note WHERE deleted_at IS NULL")

_IN_SCHEMES = Query("SELECT id FROM concept WHERE scheme_id = ANY(:ids::uuid[])")
_EXISTING_CONCEPTS = Query("SELECT id FROM concept WHERE id = ANY(:ids::uuid[])")
_STATUSES = Query("SELECT id, status FROM concept WHERE id = ANY(:ids::uuid[])")
_EXISTING_SCHEMES = Query("SELECT id FROM concept_scheme WHERE id = ANY(:ids::uuid[])")

_INSERT_CONCEPT = CONCEPT.insert(
    ("id", "scheme_id", "status", "dimension", "created_by"), suffix="RETURNING {columns}"
)
_INSERT_LABEL = LABEL.insert(suffix="ON CONFLICT DO NOTHING")
_INSERT_BROADER = Query("""
INSERT INTO concept_relation (source_id, target_id, kind, created_by)
VALUES (:source, :target, 'broader', :actor)
ON CONFLICT DO NOTHING
""")
_SET_DIMENSION = Query(
    "UPDATE concept SET dimension = :dimension, updated_at = clock_timestamp() "
    "WHERE id = :id AND dimension IS NULL"
)

# Both rows of each related pair; returns the rows actually inserted.
_RELATE = Query("""
INSERT INTO concept_relation (source_id, target_id, kind, confidence, created_by)
SELECT s, t, 'related', c, :actor
FROM unnest(:sources::uuid[], :targets::uuid[], :confidences::real[]) AS p(s, t, c)
ON CONFLICT DO NOTHING
RETURNING least(source_id::text, target_id::text) || greatest(source_id::text, target_id::text)
""")

_NOTE_CONCEPTS = NOTE_CONCEPT.query(
    """
SELECT nc.note_id, nc.concept_id, {pref} AS label, c.dimension, nc.source,
       nc.confidence, nc.relevance, nc.is_primary AS "primary", nc.created_at
FROM note_concept nc JOIN concept c ON c.id = nc.concept_id
WHERE nc.note_id = ANY(:ids::uuid[])
ORDER BY nc.note_id, nc.is_primary DESC, nc.relevance DESC, nc.created_at, nc.concept_id
""",
    pref=PREF_LABEL_SQL,
)

# FK-bound to concept (ON DELETE CASCADE): every row names an existing concept.
_NOTE_CONCEPT_IDS = Query(
    "SELECT note_id, concept_id FROM note_concept WHERE note_id = ANY(:ids::uuid[])"
)

_NOTE_CONCEPT_ROWS = Query(
    "SELECT concept_id, source, is_primary FROM note_concept WHERE note_id = :id FOR UPDATE"
)

_UPSERT_NOTE_CONCEPT = Query("""
INSERT INTO note_concept (note_id, concept_id, source, confidence, relevance, is_primary,
                          created_by)
VALUES (:note, :concept, :source, :confidence, :relevance, false, :actor)
ON CONFLICT (note_id, concept_id) DO UPDATE
SET confidence = excluded.confidence, relevance = excluded.relevance,
    source = CASE WHEN note_concept.source = 'ai_auto' THEN excluded.source
                  ELSE note_concept.source END
""")

_DELETE_NOTE_CONCEPTS = Query(
    "DELETE FROM note_concept WHERE note_id = :note AND concept_id = ANY(:ids::uuid[]) "
    "RETURNING concept_id"
)
_CLEAR_PRIMARY = Query(
    "UPDATE note_concept SET is_primary = false WHERE note_id = :note AND is_primary"
)
_SET_PRIMARY = Query(
    "UPDATE note_concept SET is_primary = true WHERE note_id = :note AND concept_id = :concept"
)

# Literary warrant: a candidate with enough live notes becomes controlled. Never demoted
# automatically: a controlled term stays stable until governance deprecates it.
_WARRANT = Query("""
UPDATE concept SET status = 'controlled', updated_at = clock_timestamp()
WHERE id = ANY(:ids::uuid[]) AND status = 'candidate'
  AND (SELECT count(*) FROM note_concept nc JOIN note n ON n.id = nc.note_id
       WHERE nc.concept_id = concept.id AND n.deleted_at IS NULL) >= :warrant
RETURNING id
""")

_LABEL_INDEX = CONCEPT.query(
    """
SELECT c.id, c.dimension, l.label, l.kind, {pref} AS pref
FROM concept c JOIN concept_label l ON l.concept_id = c.id
WHERE c.status <> 'deprecated'
ORDER BY c.id, l.kind, l.lang, l.key
""",
    pref=PREF_LABEL_SQL,
)

# The first broader of each concept (oldest link, then id): the chain a path is read along.
_FIRST_BROADER = Query("""
SELECT DISTINCT ON (source_id) source_id, target_id
FROM concept_relation WHERE kind = 'broader'
ORDER BY source_id, created_at, target_id
""")

_PREF_LABELS = CONCEPT.query(
    "SELECT c.id, {pref} AS label FROM concept c WHERE c.id = ANY(:ids::uuid[])",
    pref=PREF_LABEL_SQL,
)


# How often concepts occur, alone and together, on the memory's live notes (for
# related-concept inference). Counted here rather than from every note's concepts in
# Python, which would move the whole table per job.
_CONCEPT_NOTES = Query("""
SELECT count(DISTINCT nc.note_id)
FROM note_concept nc JOIN note n ON n.id = nc.note_id
WHERE n.deleted_at IS NULL
""")
_SINGLES = Query("""
SELECT nc.concept_id, count(*) AS notes
FROM note_concept nc JOIN note n ON n.id = nc.note_id
WHERE n.deleted_at IS NULL AND nc.concept_id = ANY(:ids::uuid[])
GROUP BY nc.concept_id
""")
_PAIRS = Query("""
SELECT a.concept_id AS first, b.concept_id AS second, count(*) AS notes
FROM note_concept a
JOIN note_concept b ON b.note_id = a.note_id AND b.concept_id > a.concept_id
JOIN note n ON n.id = a.note_id
WHERE n.deleted_at IS NULL
  AND a.concept_id = ANY(:ids::uuid[]) AND b.concept_id = ANY(:ids::uuid[])
GROUP BY a.concept_id, b.concept_id
""")


class VocabularyRepository:
    async def lock(self, conn: Connection) -> None:
        await conn.execute(_LOCK.sql)

    async def note_live(self, conn: Connection, note_id: UUID) -> bool | None:
        """True for a live note, False for a soft-deleted one, None when absent."""
        value: bool | None = await conn.fetchval(_LIVE_NOTE.sql, *_LIVE_NOTE.args(id=note_id))
        return value

    async def default_scheme(self, conn: Connection, new_id: UUID, actor: str | None) -> UUID:
        found: UUID | None = await conn.fetchval(_DEFAULT_SCHEME.sql)
        if found is not None:
            return found
        await conn.execute(
            _CREATE_DEFAULT_SCHEME.sql, *_CREATE_DEFAULT_SCHEME.args(id=new_id, actor=actor)
        )
        created: UUID = await conn.fetchval(_DEFAULT_SCHEME.sql)
        return created

    async def concepts_by_key(self, conn: Connection, keys: Sequence[str]) -> dict[str, list[UUID]]:
        """Non-deprecated concepts having a label that folds to each key, oldest first."""
        rows = await conn.fetch(_BY_KEY.sql, *_BY_KEY.args(keys=list(set(keys))))
        found: dict[str, list[tuple[datetime, UUID]]] = {}
        for row in rows:
            found.setdefault(row["key"], []).append((row["created_at"], row["id"]))
        return {key: [cid for _, cid in sorted(items)] for key, items in found.items()}

    async def narrower_by_key(self, conn: Connection, parent: UUID, key: str) -> UUID | None:
        args = _NARROWER_BY_KEY.args(parent=parent, key=key)
        found: UUID | None = await conn.fetchval(_NARROWER_BY_KEY.sql, *args)
        return found

    async def broader_count(self, conn: Connection, concept_id: UUID) -> int:
        count: int = await conn.fetchval(_BROADER_COUNT.sql, *_BROADER_COUNT.args(id=concept_id))
        return count

    async def level(self, conn: Connection, concept_id: UUID) -> int:
        level: int = await conn.fetchval(_LEVEL.sql, *_LEVEL.args(id=concept_id))
        return level

    async def height(self, conn: Connection, concept_id: UUID) -> int:
        height: int = await conn.fetchval(_HEIGHT.sql, *_HEIGHT.args(id=concept_id))
        return height

    async def is_ancestor(self, conn: Connection, concept_id: UUID, ancestor: UUID) -> bool:
        args = _IS_ANCESTOR.args(id=concept_id, ancestor=ancestor)
        return bool(await conn.fetchval(_IS_ANCESTOR.sql, *args))

    async def descendants(self, conn: Connection, concept_ids: Sequence[UUID]) -> set[UUID]:
        """``concept_ids`` (those that exist) and every concept narrower than one of them."""
        rows = await conn.fetch(_DESCENDANTS.sql, *_DESCENDANTS.args(ids=list(concept_ids)))
        return {row["id"] for row in rows}

    async def notes_under(self, conn: Connection, concept_ids: Sequence[UUID]) -> dict[UUID, int]:
        """For each of ``concept_ids``, how many live notes carry it or a narrower concept
        (absent: none)."""
        rows = await conn.fetch(_NOTES_UNDER.sql, *_NOTES_UNDER.args(ids=list(concept_ids)))
        return {row["id"]: int(row["notes"]) for row in rows}

    async def live_notes(self, conn: Connection) -> int:
        return int(await conn.fetchval(_LIVE_NOTES.sql))

    async def concepts_in_schemes(self, conn: Connection, scheme_ids: Sequence[UUID]) -> set[UUID]:
        rows = await conn.fetch(_IN_SCHEMES.sql, *_IN_SCHEMES.args(ids=list(scheme_ids)))
        return {row["id"] for row in rows}

    async def existing_concepts(self, conn: Connection, ids: Sequence[UUID]) -> set[UUID]:
        rows = await conn.fetch(_EXISTING_CONCEPTS.sql, *_EXISTING_CONCEPTS.args(ids=list(ids)))
        return {row["id"] for row in rows}

    async def statuses(self, conn: Connection, ids: Sequence[UUID]) -> dict[UUID, str]:
        rows = await conn.fetch(_STATUSES.sql, *_STATUSES.args(ids=list(ids)))
        return {row["id"]: row["status"] for row in rows}

    async def existing_schemes(self, conn: Connection, ids: Sequence[UUID]) -> set[UUID]:
        rows = await conn.fetch(_EXISTING_SCHEMES.sql, *_EXISTING_SCHEMES.args(ids=list(ids)))
        return {row["id"] for row in rows}

    async def insert_concept(
        self,
        conn: Connection,
        *,
        concept_id: UUID,
        scheme_id: UUID,
        label: str,
        dimension: str | None,
        actor: str | None,
    ) -> Concept:
        args = _INSERT_CONCEPT.args(
            id=concept_id,
            scheme_id=scheme_id,
            status="candidate",
            dimension=dimension,
            created_by=actor,
        )
        row = await conn.fetchrow(_INSERT_CONCEPT.sql, *args)
        await self.insert_label(conn, ConceptLabel(concept_id, "pref", "", label))
        return CONCEPT.from_record(row)  # type: ignore[arg-type]

    async def insert_label(self, conn: Connection, label: ConceptLabel) -> None:
        await conn.execute(_INSERT_LABEL.sql, *_INSERT_LABEL.args(LABEL.binds(label)))

    async def add_broader(
        self, conn: Connection, concept_id: UUID, broader_id: UUID, actor: str | None
    ) -> None:
        args = _INSERT_BROADER.args(source=concept_id, target=broader_id, actor=actor)
        await conn.execute(_INSERT_BROADER.sql, *args)

    async def fill_dimension(self, conn: Connection, concept_id: UUID, dimension: str) -> None:
        await conn.execute(
            _SET_DIMENSION.sql, *_SET_DIMENSION.args(id=concept_id, dimension=dimension)
        )

    async def relate(
        self, conn: Connection, pairs: Sequence[tuple[UUID, UUID, float]], actor: str
    ) -> int:
        """Both rows of each pair; how many pairs were not there before (either row)."""
        sources = [a for a, b, _ in pairs] + [b for a, b, _ in pairs]
        targets = [b for a, b, _ in pairs] + [a for a, b, _ in pairs]
        confidences = [c for _, _, c in pairs] * 2
        args = _RELATE.args(sources=sources, targets=targets, confidences=confidences, actor=actor)
        rows = await conn.fetch(_RELATE.sql, *args)
        return len({row[0] for row in rows})

    async def note_concepts(
        self, conn: Connection, note_ids: Sequence[UUID]
    ) -> dict[UUID, list[NoteConcept]]:
        rows = await conn.fetch(_NOTE_CONCEPTS.sql, *_NOTE_CONCEPTS.args(ids=list(note_ids)))
        found: dict[UUID, list[NoteConcept]] = {}
        for row in rows:
            found.setdefault(row["note_id"], []).append(NOTE_CONCEPT.from_record(row))
        return found

    async def note_concept_ids(
        self, conn: Connection, note_ids: Sequence[UUID]
    ) -> dict[UUID, set[UUID]]:
        """The concept ids of each note; notes without any are absent."""
        rows = await conn.fetch(_NOTE_CONCEPT_IDS.sql, *_NOTE_CONCEPT_IDS.args(ids=list(note_ids)))
        found: dict[UUID, set[UUID]] = {}
        for note_id, concept_id in rows:
            found.setdefault(note_id, set()).add(concept_id)
        return found

    async def note_concept_rows(
        self, conn: Connection, note_id: UUID
    ) -> dict[UUID, tuple[str, bool]]:
        """(source, primary) of each concept on the note, rows locked."""
        rows = await conn.fetch(_NOTE_CONCEPT_ROWS.sql, *_NOTE_CONCEPT_ROWS.args(id=note_id))
        return {row["concept_id"]: (row["source"], row["is_primary"]) for row in rows}

    async def attach(
        self,
        conn: Connection,
        note_id: UUID,
        concept_id: UUID,
        *,
        source: str,
        confidence: float,
        relevance: float,
        actor: str | None,
    ) -> None:
        """Attach, or update the attachment; a human source takes over an ``ai_auto`` row,
        never the other way round."""
        args = _UPSERT_NOTE_CONCEPT.args(
            note=note_id,
            concept=concept_id,
            source=source,
            confidence=confidence,
            relevance=relevance,
            actor=actor,
        )
        await conn.execute(_UPSERT_NOTE_CONCEPT.sql, *args)

    async def detach(
        self, conn: Connection, note_id: UUID, concept_ids: Sequence[UUID]
    ) -> set[UUID]:
        args = _DELETE_NOTE_CONCEPTS.args(note=note_id, ids=list(concept_ids))
        return {row["concept_id"] for row in await conn.fetch(_DELETE_NOTE_CONCEPTS.sql, *args)}

    async def set_primary(self, conn: Connection, note_id: UUID, concept_id: UUID) -> None:
        await conn.execute(_CLEAR_PRIMARY.sql, *_CLEAR_PRIMARY.args(note=note_id))
        await conn.execute(_SET_PRIMARY.sql, *_SET_PRIMARY.args(note=note_id, concept=concept_id))

    async def apply_warrant(
        self, conn: Connection, concept_ids: Sequence[UUID], warrant: int
    ) -> set[UUID]:
        """Promote the candidates among ``concept_ids`` that have ``warrant`` live notes."""
        args = _WARRANT.args(ids=list(concept_ids), warrant=warrant)
        return {row["id"] for row in await conn.fetch(_WARRANT.sql, *args)}

    async def label_rows(self, conn: Connection) -> list[tuple[UUID, str | None, str, str, str]]:
        """(concept, dimension, label, kind, pref label) of every non-deprecated concept."""
        rows = await conn.fetch(_LABEL_INDEX.sql)
        return [(r["id"], r["dimension"], r["label"], r["kind"], r["pref"]) for r in rows]

    async def first_broader(self, conn: Connection) -> dict[UUID, UUID]:
        return {r["source_id"]: r["target_id"] for r in await conn.fetch(_FIRST_BROADER.sql)}

    async def pref_labels(self, conn: Connection, concept_ids: Sequence[UUID]) -> dict[UUID, str]:
        rows = await conn.fetch(_PREF_LABELS.sql, *_PREF_LABELS.args(ids=list(concept_ids)))
        return {row["id"]: row["label"] for row in rows}

    async def cooccurrence(self, conn: Connection, concept_ids: Sequence[UUID]) -> Cooccurrence:
        ids = sorted(set(concept_ids))
        notes = await conn.fetchval(_CONCEPT_NOTES.sql)
        singles = await conn.fetch(_SINGLES.sql, *_SINGLES.args(ids=ids))
        pairs = await conn.fetch(_PAIRS.sql, *_PAIRS.args(ids=ids))
        return Cooccurrence(
            notes=int(notes or 0),
            singles={row["concept_id"]: int(row["notes"]) for row in singles},
            pairs={(row["first"], row["second"]): int(row["notes"]) for row in pairs},
        )
