"""The one query tagging makes itself: how often concepts occur, alone and together, on
the memory's live notes (for related-concept inference).

It reads ``note_concept``, the vocabulary's table, and writes nothing: the vocabulary's
service owns every change to it. A count is a memory-wide aggregate the vocabulary API
has no call for, and fetching every note's concepts to count them in Python would move
the whole table per job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from fortemi.platform.database import Connection
from fortemi.platform.sql import Query

__all__ = ["Cooccurrence", "TaggingRepository"]

_LIVE_NOTES = Query(
    """
    SELECT count(DISTINCT nc.note_id)
    FROM note_concept nc JOIN note n ON n.id = nc.note_id
    WHERE n.deleted_at IS NULL
    """
)

_SINGLES = Query(
    """
    SELECT nc.concept_id, count(*) AS notes
    FROM note_concept nc JOIN note n ON n.id = nc.note_id
    WHERE n.deleted_at IS NULL AND nc.concept_id = ANY(:ids::uuid[])
    GROUP BY nc.concept_id
    """
)

_PAIRS = Query(
    """
    SELECT a.concept_id AS first, b.concept_id AS second, count(*) AS notes
    FROM note_concept a
    JOIN note_concept b ON b.note_id = a.note_id AND b.concept_id > a.concept_id
    JOIN note n ON n.id = a.note_id
    WHERE n.deleted_at IS NULL
      AND a.concept_id = ANY(:ids::uuid[]) AND b.concept_id = ANY(:ids::uuid[])
    GROUP BY a.concept_id, b.concept_id
    """
)


@dataclass(frozen=True, slots=True)
class Cooccurrence:
    """Over the memory's live notes that carry any concept: how many there are, how many
    carry each concept, and each pair (keyed smaller id first)."""

    notes: int
    singles: dict[UUID, int]
    pairs: dict[tuple[UUID, UUID], int]

    def together(self, a: UUID, b: UUID) -> int:
        return self.pairs.get((a, b) if a < b else (b, a), 0)


class TaggingRepository:
    async def cooccurrence(self, conn: Connection, concept_ids: Sequence[UUID]) -> Cooccurrence:
        ids = sorted(set(concept_ids))
        notes = await conn.fetchval(_LIVE_NOTES.sql, *_LIVE_NOTES.args())
        singles = await conn.fetch(_SINGLES.sql, *_SINGLES.args(ids=ids))
        pairs = await conn.fetch(_PAIRS.sql, *_PAIRS.args(ids=ids))
        return Cooccurrence(
            notes=int(notes or 0),
            singles={row["concept_id"]: int(row["notes"]) for row in singles},
            pairs={(row["first"], row["second"]): int(row["notes"]) for row in pairs},
        )
