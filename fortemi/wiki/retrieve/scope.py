"""The seam that says which notes a project's questions may draw on.

A vault's project reaches its own notes and the shared notes its links lead to (followed
through shared notes only). Link resolution lives elsewhere; until it answers, the
default here takes the project's own notes plus every shared note that belongs to no
skill, which over-approximates a project's reach over shared concepts and leaves skills
out. :class:`LinkedReach` adapts the link graph's reachable sets (a
:class:`VaultReach`, such as the link service) to this seam. Whatever a resolver returns
is then intersected, in SQL, with what the caller may read.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from fortemi.platform.notes.models import NameSet, NoteVisibility
from fortemi.retrieval.service import NoteScope, ScopedRetrieval

__all__ = ["LinkedReach", "ProjectAndSharedScope", "ScopeResolver", "VaultReach"]


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


class VaultReach(Protocol):
    async def reachable(self, memory: str, vault: str, project: str) -> set[UUID]:
        """The project's notes in ``vault`` and the shared notes its links reach through
        shared notes only."""
        ...


class LinkedReach:
    """The link graph's reachable set of the project in ``vault``; without a vault, the
    project's own notes and the union of its reachable sets in the vaults its notes came
    from. A project with no vault notes falls back to its own notes and the memory's
    shared ones (:class:`ProjectAndSharedScope`)."""

    def __init__(self, links: VaultReach, retrieval: ScopedRetrieval) -> None:
        self._links = links
        self._retrieval = retrieval
        self._fallback = ProjectAndSharedScope(retrieval)

    async def reachable(self, memory: str, vault: str | None, project: str) -> set[UUID]:
        if vault is not None:
            return await self._links.reachable(memory, vault, project)
        own = NoteVisibility(
            memory_notes=False, projects=NameSet(frozenset({project})), skills=NameSet()
        )
        vaults = await self._retrieval.vaults(memory, NoteScope(own))
        if not vaults:
            return await self._fallback.reachable(memory, None, project)
        found = set(await self._retrieval.notes(memory, NoteScope(own)))
        for name in vaults:
            found |= await self._links.reachable(memory, name, project)
        return found
