"""The seam that says which notes a project's questions may draw on.

A vault's project reaches its own notes and the shared notes its links lead to (followed
through shared notes only). Link resolution lives elsewhere; until it answers, the
default here takes the project's own notes plus every shared note that belongs to no
skill, which over-approximates a project's reach over shared concepts and leaves skills
out. Whatever a resolver returns is then intersected, in SQL, with what the caller may
read.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from fortemi.platform.notes.models import NameSet, NoteVisibility
from fortemi.retrieval.service import NoteScope, ScopedRetrieval

__all__ = ["ProjectAndSharedScope", "ScopeResolver"]


class ScopeResolver(Protocol):
    async def reachable(self, memory: str, vault: str | None, project: str) -> set[UUID]:
        """The notes a question in ``project`` may draw on (before the caller's access)."""
        ...


class ProjectAndSharedScope:
    """The project's own notes plus every shared note without a skill, in ``vault``
    when one is named."""

    def __init__(self, retrieval: ScopedRetrieval) -> None:
        self._retrieval = retrieval

    async def reachable(self, memory: str, vault: str | None, project: str) -> set[UUID]:
        own_and_shared = NoteVisibility(
            memory_notes=True,
            projects=NameSet(frozenset({project})),
            skills=NameSet(frozenset()),
        )
        return set(await self._retrieval.notes(memory, NoteScope(own_and_shared, vault)))
