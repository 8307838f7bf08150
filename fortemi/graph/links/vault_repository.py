"""The SQL of vault reads: a project's reachable set, and a vault's link status.

A vault's notes are those whose ``metadata.vault`` names it (``note_vault_idx``). The
reads that apply a caller's read scope splice the fixed fragments of
:func:`~fortemi.platform.notes.repository.note_filter_where` (those lines carry
``noqa: S608``), inside a sub-select on ``note`` so its unqualified columns can only mean
the note's.
"""

from __future__ import annotations

from uuid import UUID

from fortemi.graph.links.models import VaultDangling
from fortemi.platform.database import Connection
from fortemi.platform.notes.models import NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import note_filter_where
from fortemi.platform.sql import Query, Where

__all__ = ["VaultLinkRepository"]

# All of the project's live notes, then, one step at a time, the live shared notes of the
# vault (no project) that a resolved wiki link of a note already reached names. A link
# into a project is never followed: a shared note linking into another project does not
# open it, and links back into the project find notes the seed holds. UNION (not ALL)
# drops what was reached before, so a cycle of shared notes ends the walk.
_REACH = Query("""
WITH RECURSIVE walk (id) AS (
    SELECT id FROM note
    WHERE metadata ->> 'vault' = :vault AND project = :project AND deleted_at IS NULL
  UNION
    SELECT t.id
    FROM walk w
    JOIN wiki_link l ON l.source_id = w.id
    JOIN note t ON t.id = l.target_id
    WHERE t.project IS NULL AND t.deleted_at IS NULL AND t.metadata ->> 'vault' = :vault
)
SELECT id FROM walk
""")


def _readable(vault: str, visibility: NoteVisibility | None) -> Where:
    """``$1`` the vault; the caller's live readable notes of it."""
    where = Where(vault)
    where.add("metadata ->> 'vault' = $1")
    return note_filter_where(NoteFilter(visibility=visibility), where)


class VaultLinkRepository:
    async def reach(self, conn: Connection, vault: str, project: str) -> set[UUID]:
        rows = await conn.fetch(_REACH.sql, *_REACH.args(vault=vault, project=project))
        return {row["id"] for row in rows}

    async def paths(
        self, conn: Connection, vault: str, ids: set[UUID], visibility: NoteVisibility | None
    ) -> list[tuple[UUID, str]]:
        """(id, path) of the notes of ``ids`` the caller may read, by path."""
        where = _readable(vault, visibility)
        where.add("id = ANY({0}::uuid[])", sorted(ids))
        query = (
            f"SELECT id, metadata ->> 'path' AS path FROM note WHERE {where.sql()} "  # noqa: S608 - fixed fragments
            "ORDER BY path, id"
        )
        return [(row["id"], row["path"]) for row in await conn.fetch(query, *where.args)]

    async def counts(
        self, conn: Connection, vault: str, visibility: NoteVisibility | None
    ) -> dict[str, int]:
        """``notes``, ``links``, ``resolved``, ``dangling`` (ambiguous included) and
        ``ambiguous``, over the caller's readable live notes of the vault."""
        where = _readable(vault, visibility)
        query = (
            f"WITH src AS (SELECT id FROM note WHERE {where.sql()}) "  # noqa: S608 - fixed fragments
            "SELECT (SELECT count(*) FROM src) AS notes, count(l.source_id) AS links, "
            "count(l.target_id) AS resolved, "
            "count(l.source_id) FILTER (WHERE l.target_id IS NULL) AS dangling, "
            "count(l.source_id) FILTER (WHERE l.resolution = 'ambiguous') AS ambiguous "
            "FROM src JOIN wiki_link l ON l.source_id = src.id"
        )
        row = await conn.fetchrow(query, *where.args)
        return {key: int(row[key]) if row is not None else 0 for key in _COUNTS}

    async def dangling(
        self, conn: Connection, vault: str, visibility: NoteVisibility | None, limit: int
    ) -> list[VaultDangling]:
        """The unresolved references of the caller's readable notes of the vault, by
        source path and position, at most ``limit``."""
        where = _readable(vault, visibility)
        query = (
            "SELECT s.id, s.path, l.target, l.heading, l.resolution, l.matches "  # noqa: S608 - fixed fragments
            "FROM (SELECT id, metadata ->> 'path' AS path FROM note "
            f"WHERE {where.sql()}) AS s "
            "JOIN wiki_link l ON l.source_id = s.id WHERE l.target_id IS NULL "
            f"ORDER BY s.path, s.id, l.ordinal LIMIT ${len(where.args) + 1}"
        )
        rows = await conn.fetch(query, *where.args, limit)
        return [
            VaultDangling(
                source_id=row["id"],
                source_path=row["path"],
                target=row["target"],
                heading=row["heading"],
                reason=row["resolution"],
                matches=row["matches"],
            )
            for row in rows
        ]


_COUNTS = ("notes", "links", "resolved", "dangling", "ambiguous")
