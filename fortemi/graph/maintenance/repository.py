"""All of graph maintenance's SQL: reading the graph (note vectors, links), writing what
a run decided (SNN deletions and scores, PFNET flags, communities) and the diagnostics
snapshots. Every method runs in the caller's memory transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from fortemi.graph.linking.repository import NOTE_EMBEDDING
from fortemi.graph.links.repository import NOTE_LINK
from fortemi.graph.maintenance.algorithms import Communities, Pair, Vector, pair
from fortemi.graph.maintenance.plan import GraphState
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
# Each link between two live notes; a semantic pair is read once (its two rows agree).
_LINKS = NOTE_LINK.query(
    """
    SELECT {selected}
    FROM {table} l
    JOIN note s ON s.id = l.source_id AND s.deleted_at IS NULL
    JOIN note t ON t.id = l.target_id AND t.deleted_at IS NULL
    WHERE l.kind <> 'semantic' OR l.source_id < l.target_id
    """,
    selected=NOTE_LINK.names("source_id", "target_id", "kind", "score", "pruned", alias="l"),
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


def _both_ways(pairs: Sequence[Pair]) -> tuple[list[UUID], list[UUID]]:
    sources = [a for a, _ in pairs] + [b for _, b in pairs]
    targets = [b for _, b in pairs] + [a for a, _ in pairs]
    return sources, targets


class MaintenanceRepository:
    async def busiest_set(self, conn: Connection) -> int | None:
        """The set holding the most note vectors (the newest among equals): while a new
        set fills, the old one still describes the graph."""
        found = await conn.fetchval(_BUSIEST_SET.sql)
        return None if found is None else int(found)

    async def state(self, conn: Connection, set_id: int | None) -> GraphState:
        vectors: dict[UUID, Vector] = {}
        if set_id is not None:
            for row in await conn.fetch(_VECTORS.sql, *_VECTORS.args(set_id=set_id)):
                vectors[row["note_id"]] = stored_vector(row["embedding"])
        semantic: dict[Pair, float] = {}
        pruned: set[Pair] = set()
        other: dict[Pair, float] = {}
        for row in await conn.fetch(_LINKS.sql):
            key = pair(row["source_id"], row["target_id"])
            score = float(row["score"])
            if row["kind"] == "semantic":
                semantic[key] = score
                if row["pruned"]:
                    pruned.add(key)
            else:
                other[key] = max(score, other.get(key, 0.0))
        notes = set(vectors)
        for a, b in (*semantic, *other):
            notes.update((a, b))
        return GraphState(
            notes=sorted(notes),
            vectors=vectors,
            semantic=semantic,
            pruned=frozenset(pruned),
            other=other,
        )

    async def delete_pairs(self, conn: Connection, pairs: Sequence[Pair]) -> None:
        if pairs:
            sources, targets = _both_ways(pairs)
            await conn.execute(
                _DELETE_PAIRS.sql, *_DELETE_PAIRS.args(sources=sources, targets=targets)
            )

    async def mark(
        self,
        conn: Connection,
        pairs: Sequence[Pair],
        snn: Mapping[Pair, float] | None,
        pruned: frozenset[Pair] | None,
    ) -> None:
        """Give each of ``pairs`` (semantic, both rows) its SNN score from ``snn`` and its
        flag from ``pruned`` (membership); None leaves that column as it is."""
        if not pairs or (snn is None and pruned is None):
            return
        ordered = sorted(pairs)
        sources, targets = _both_ways(ordered)
        scores = [None if snn is None else snn.get(p) for p in ordered] * 2
        flags = [pruned is not None and p in pruned for p in ordered] * 2
        await conn.execute(
            _MARK.sql,
            *_MARK.args(
                sources=sources,
                targets=targets,
                scores=scores,
                flags=flags,
                with_snn=snn is not None,
                with_pruned=pruned is not None,
            ),
        )

    async def replace_communities(
        self,
        conn: Connection,
        found: Communities,
        labels: Sequence[tuple[str | None, UUID | None]],
    ) -> None:
        """Make ``found`` the memory's communities; ``labels[i]`` is community i's."""
        await conn.execute(_CLEAR_NOTE_COMMUNITIES.sql)
        await conn.execute(_CLEAR_COMMUNITIES.sql)
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
