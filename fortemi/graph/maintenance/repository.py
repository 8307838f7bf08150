"""All of graph maintenance's SQL: reading the graph (note vectors, links), writing what
a run decided (SNN deletions and scores, PFNET flags, communities) and the diagnostics
snapshots. Every method runs in the caller's memory transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.graph.linking.repository import NOTE_EMBEDDING
from fortemi.graph.links.repository import NOTE_LINK
from fortemi.graph.maintenance.algorithms import Communities, Vector
from fortemi.graph.maintenance.indexed import (
    Ids,
    NoteVectors,
    OtherRows,
    SemanticRows,
    ids_from_bytes,
    ids_of,
    stack,
)
from fortemi.platform.database import Connection, stored_vector
from fortemi.platform.sql import Query, Table

__all__ = ["GRAPH_SNAPSHOT", "CommunityRow", "MaintenanceRepository", "Snapshot"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: int
    taken_at: datetime
    steps: tuple[str, ...]
    metrics: dict[str, Any]
    created_by: str | None


@dataclass(frozen=True, slots=True)
class CommunityRow:
    community: int
    label: str | None
    concept_id: UUID | None
    size: int


GRAPH_SNAPSHOT = Table("graph_snapshot", Snapshot)
GRAPH_COMMUNITY = Table("graph_community", CommunityRow)

_BUSIEST_SET = Query(
    "SELECT set_id FROM note_embedding GROUP BY set_id ORDER BY count(*) DESC, set_id DESC LIMIT 1"
)
_VECTORS = NOTE_EMBEDDING.query(
    "SELECT {selected} FROM {table} e JOIN note n ON n.id = e.note_id "
    "WHERE e.set_id = :set_id AND n.deleted_at IS NULL ORDER BY e.note_id",
    selected=NOTE_EMBEDDING.names("note_id", "embedding", alias="e"),
)
# Each semantic pair between two live notes, once (its two rows agree), with what the
# last run stored on it; and each explicit and wiki link between live notes (a pair may
# come both ways). Each column comes as one bytea of fixed-width binary values, in the
# same row order (the aggregates of one query level see the rows in one order): numpy
# reads them as they are. Sending 71k rows, each made a Python record with two UUID
# objects, took three times as long as the query (1.1 s against 0.2-0.3 s at 10k notes).
_LINK_FROM = """
    FROM {table} l
    JOIN note s ON s.id = l.source_id AND s.deleted_at IS NULL
    JOIN note t ON t.id = l.target_id AND t.deleted_at IS NULL
"""
_SEMANTIC = NOTE_LINK.query(
    """
    SELECT string_agg(uuid_send(l.source_id), '') AS sources,
           string_agg(uuid_send(l.target_id), '') AS targets,
           string_agg(float4send(l.score), '') AS scores,
           string_agg(boolsend(l.pruned), '') AS pruned,
           -- NaN for none: the column's CHECK keeps NaN out of it.
           string_agg(float4send(coalesce(l.snn, 'NaN')), '') AS snn
    """
    + _LINK_FROM
    + "WHERE l.kind = 'semantic' AND l.source_id < l.target_id",
)
_SEMANTIC_PAIRS = Query(
    "SELECT count(*) FROM note_link WHERE kind = 'semantic' AND source_id < target_id"
)
_OTHER = NOTE_LINK.query(
    """
    SELECT string_agg(uuid_send(l.source_id), '') AS sources,
           string_agg(uuid_send(l.target_id), '') AS targets,
           string_agg(float4send(l.score), '') AS scores
    """
    + _LINK_FROM
    + "WHERE l.kind <> 'semantic'",
)
_DELETE_PAIRS = Query(
    """
    DELETE FROM note_link l USING unnest(:sources::uuid[], :targets::uuid[]) AS d(a, b)
    WHERE l.kind = 'semantic' AND l.source_id = d.a AND l.target_id = d.b
    """
)
# SNN scores and PFNET flags in one pass (one new row version per changed row, not
# two); rows whose values stay are not touched. ``with_snn`` / ``with_pruned`` off keep
# that column as it is.
_MARK = Query(
    """
    UPDATE note_link l SET
        snn = CASE WHEN :with_snn THEN d.s ELSE l.snn END,
        pruned = CASE WHEN :with_pruned THEN d.p ELSE l.pruned END
    FROM unnest(:sources::uuid[], :targets::uuid[], :scores::real[], :flags::boolean[])
         AS d(a, b, s, p)
    WHERE l.kind = 'semantic' AND l.source_id = d.a AND l.target_id = d.b
      AND ((:with_snn AND l.snn IS DISTINCT FROM d.s) OR (:with_pruned AND l.pruned <> d.p))
    """
)
_CLEAR_NOTE_COMMUNITIES = Query("DELETE FROM note_community")
_CLEAR_COMMUNITIES = Query("DELETE FROM graph_community")
_INSERT_NOTE_COMMUNITIES = Query(
    """
    INSERT INTO note_community (note_id, community, confidence)
    SELECT * FROM unnest(:notes::uuid[], :communities::int[], :confidences::real[])
    """
)
_INSERT_COMMUNITIES = Query(
    """
    INSERT INTO graph_community (community, label, concept_id, size)
    SELECT * FROM unnest(:communities::int[], :labels::text[], :concepts::uuid[], :sizes::int[])
    """
)
_INSERT_SNAPSHOT = GRAPH_SNAPSHOT.insert(
    ("steps", "metrics", "created_by"), suffix="RETURNING {columns}"
)
_SNAPSHOTS = GRAPH_SNAPSHOT.query("SELECT {columns} FROM {table} ORDER BY id DESC LIMIT :limit")
_SNAPSHOT = GRAPH_SNAPSHOT.query("SELECT {columns} FROM {table} WHERE id = :id")
_COMMUNITIES = GRAPH_COMMUNITY.query("SELECT {columns} FROM {table} ORDER BY community")


def _ids(raw: bytes | None) -> Ids:
    return ids_from_bytes(raw or b"")


def _floats(raw: bytes | None) -> npt.NDArray[np.float64]:
    """float4send values (big-endian) as float64 (exactly the ``real`` values)."""
    return np.frombuffer(raw or b"", dtype=">f4").astype(np.float64)


class MaintenanceRepository:
    async def busiest_set(self, conn: Connection) -> int | None:
        """The set holding the most note vectors (the newest among equals): while a new
        set fills, the old one still describes the graph."""
        found = await conn.fetchval(_BUSIEST_SET.sql)
        return None if found is None else int(found)

    async def vectors(self, conn: Connection, set_id: int | None) -> NoteVectors:
        """The live notes' vectors in ``set_id``, in note id order (the plan's order)."""
        notes: list[UUID] = []
        vectors: list[Vector] = []
        if set_id is not None:
            for row in await conn.fetch(_VECTORS.sql, *_VECTORS.args(set_id=set_id)):
                notes.append(row["note_id"])
                vectors.append(stored_vector(row["embedding"]))
        ids, matrix = ids_of(notes), stack(vectors)
        order = np.lexsort((ids[:, 1], ids[:, 0]))  # PostgreSQL's uuid order is the same
        return ids[order], matrix[order]

    async def semantic_pairs(self, conn: Connection) -> int:
        """About how many semantic pairs the memory holds (deleted notes' included)."""
        return int(await conn.fetchval(_SEMANTIC_PAIRS.sql) or 0)

    async def links(self, conn: Connection) -> tuple[SemanticRows, OtherRows]:
        """The links between live notes: semantic ones once per pair, the others as rows."""
        semantic = await conn.fetchrow(_SEMANTIC.sql)
        other = await conn.fetchrow(_OTHER.sql)
        if semantic is None or other is None:
            raise RuntimeError("an aggregate query returned no row")
        return (
            SemanticRows(
                _ids(semantic["sources"]),
                _ids(semantic["targets"]),
                _floats(semantic["scores"]),
                np.frombuffer(semantic["pruned"] or b"", dtype=np.bool_),
                _floats(semantic["snn"]),
            ),
            OtherRows(_ids(other["sources"]), _ids(other["targets"]), _floats(other["scores"])),
        )

    async def delete_pairs(self, conn: Connection, a: Sequence[UUID], b: Sequence[UUID]) -> None:
        """Delete the semantic pairs ``(a[i], b[i])``, both rows of each."""
        if a:
            await conn.execute(
                _DELETE_PAIRS.sql, *_DELETE_PAIRS.args(sources=[*a, *b], targets=[*b, *a])
            )

    async def mark(
        self,
        conn: Connection,
        a: Sequence[UUID],
        b: Sequence[UUID],
        snn: Sequence[float | None] | None,
        pruned: Sequence[bool] | None,
    ) -> None:
        """Give the semantic pairs ``(a[i], b[i])`` (both rows) the SNN score ``snn[i]``
        and the flag ``pruned[i]``; None leaves that column as it is."""
        if not a or (snn is None and pruned is None):
            return
        await conn.execute(
            _MARK.sql,
            *_MARK.args(
                sources=[*a, *b],
                targets=[*b, *a],
                scores=[None] * (2 * len(a)) if snn is None else [*snn, *snn],
                flags=[False] * (2 * len(a)) if pruned is None else [*pruned, *pruned],
                with_snn=snn is not None,
                with_pruned=pruned is not None,
            ),
        )

    async def clear_communities(self, conn: Connection) -> None:
        await conn.execute(_CLEAR_NOTE_COMMUNITIES.sql)
        await conn.execute(_CLEAR_COMMUNITIES.sql)

    async def add_communities(
        self,
        conn: Connection,
        found: Communities,
        labels: Sequence[tuple[str | None, UUID | None]],
    ) -> None:
        """Store ``found`` (after :meth:`clear_communities`); ``labels[i]`` is community i's."""
        notes = sorted(found.community)
        await conn.execute(
            _INSERT_NOTE_COMMUNITIES.sql,
            *_INSERT_NOTE_COMMUNITIES.args(
                notes=notes,
                communities=[found.community[n] for n in notes],
                confidences=[min(1.0, max(0.0, found.confidence[n])) for n in notes],
            ),
        )
        await conn.execute(
            _INSERT_COMMUNITIES.sql,
            *_INSERT_COMMUNITIES.args(
                communities=list(range(len(found.members))),
                labels=[label for label, _ in labels],
                concepts=[concept for _, concept in labels],
                sizes=[len(members) for members in found.members],
            ),
        )

    async def communities(self, conn: Connection) -> list[CommunityRow]:
        return GRAPH_COMMUNITY.from_records(await conn.fetch(_COMMUNITIES.sql))

    async def add_snapshot(
        self, conn: Connection, steps: Sequence[str], metrics: dict[str, Any], actor: str | None
    ) -> Snapshot:
        row = await conn.fetchrow(
            _INSERT_SNAPSHOT.sql,
            *_INSERT_SNAPSHOT.args(steps=list(steps), metrics=metrics, created_by=actor),
        )
        if row is None:
            raise RuntimeError("the snapshot insert returned no row")
        return GRAPH_SNAPSHOT.from_record(row)

    async def snapshots(self, conn: Connection, limit: int) -> list[Snapshot]:
        return GRAPH_SNAPSHOT.from_records(
            await conn.fetch(_SNAPSHOTS.sql, *_SNAPSHOTS.args(limit=limit))
        )

    async def snapshot(self, conn: Connection, snapshot_id: int) -> Snapshot | None:
        row = await conn.fetchrow(_SNAPSHOT.sql, *_SNAPSHOT.args(id=snapshot_id))
        return None if row is None else GRAPH_SNAPSHOT.from_record(row)
