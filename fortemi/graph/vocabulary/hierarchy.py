"""Hierarchy limits: why a concept cannot be wired under another one."""

from __future__ import annotations

from uuid import UUID

from fortemi.graph.vocabulary.models import MAX_BROADER, MAX_DEPTH
from fortemi.graph.vocabulary.repository import VocabularyRepository
from fortemi.platform.database import Connection

__all__ = ["LimitBroken", "wiring_problem"]


class LimitBroken(Exception):
    """A change would break a hierarchy limit (depth, broader count, cycle)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


async def wiring_problem(
    repo: VocabularyRepository, conn: Connection, concept: UUID, parent: UUID
) -> LimitBroken | None:
    """Why ``concept`` cannot become narrower than ``parent``, or None: a cycle, more than
    MAX_BROADER broader concepts, or a hierarchy deeper than MAX_DEPTH levels."""
    if await repo.is_ancestor(conn, parent, concept):
        return LimitBroken(
            "That would make a concept broader than itself (a cycle); "
            "reorder the path or use another label",
            "cycle",
        )
    if await repo.broader_count(conn, concept) >= MAX_BROADER:
        return LimitBroken(
            f"A concept has at most {MAX_BROADER} broader concepts; this one has "
            f"{MAX_BROADER} already",
            "max_broader",
        )
    depth = await repo.level(conn, parent) + await repo.height(conn, concept)
    if depth > MAX_DEPTH:
        return LimitBroken(
            f"That would nest concepts {depth} levels deep; at most {MAX_DEPTH}",
            "max_depth",
        )
    return None
