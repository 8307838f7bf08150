"""Routing: which notes a question's chunks come from.

The project's scope (the :class:`~fortemi.wiki.retrieve.scope.ScopeResolver`'s notes, in
SQL intersected with what the caller may read) is ranked by TF-IDF; when nothing there
matches a word of the question, the memory-wide readable scope is ranked instead. Notes
of skills are ranked whether or not the caller may read them, so that a skill they may
not read is *seen* to be dropped: such a note never reaches the chunk stage (its text is
never read), and each distinct skill is decided, and audited, once as a deny.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace

from fortemi.platform.notes.models import NoteVisibility
from fortemi.retrieval.service import (
    DocScore,
    NoteScope,
    ScopedRanking,
    ScopedRetrieval,
    with_all_skills,
)
from fortemi.wiki.retrieve.scope import ScopeResolver

__all__ = ["Routed", "Router", "SkillGate"]

SkillGate = Callable[[Iterable[str]], Awaitable[set[str]]]
"""Decides (and audits) reading each of these skills; returns the ones allowed."""


@dataclass(frozen=True, slots=True)
class Routed:
    scope: NoteScope
    ranking: ScopedRanking  # the readable routed notes only, best first
    kind: str  # "project" or "memory"
    fell_back: bool
    dropped_skills: list[str] = field(default_factory=list)


class Router:
    def __init__(self, retrieval: ScopedRetrieval, resolver: ScopeResolver) -> None:
        self._retrieval = retrieval
        self._resolver = resolver

    async def route(
        self,
        memory: str,
        question: str,
        *,
        project: str | None,
        vault: str | None,
        visibility: NoteVisibility,
        documents: int,
        skills: SkillGate,
    ) -> Routed:
        searched = with_all_skills(visibility)
        if project is not None:
            reachable = await self._resolver.reachable(memory, vault, project)
            scope = NoteScope(searched, vault, frozenset(reachable))
            ranking = await self._retrieval.route(memory, question, scope, documents=2 * documents)
            if ranking.documents:
                return await _cut(scope, ranking, "project", False, visibility, documents, skills)
        scope = NoteScope(searched, vault)
        ranking = await self._retrieval.route(memory, question, scope, documents=2 * documents)
        fell_back = project is not None
        return await _cut(scope, ranking, "memory", fell_back, visibility, documents, skills)


async def _cut(
    scope: NoteScope,
    ranking: ScopedRanking,
    kind: str,
    fell_back: bool,
    visibility: NoteVisibility,
    documents: int,
    skills: SkillGate,
) -> Routed:
    """The best ``documents`` readable notes; the skills of unreadable ones ranked among
    them are decided through ``skills`` (audited) and dropped unless it allows them."""
    kept: list[DocScore] = []
    hidden: list[DocScore] = []
    for doc in ranking.documents:
        if len(kept) == documents:
            break
        if visibility.allows(doc.project, doc.skill):
            kept.append(doc)
        else:
            hidden.append(doc)
    names = sorted({doc.skill for doc in hidden if doc.skill is not None})
    allowed = await skills(names) if names else set()
    for doc in hidden:  # the engine may admit what the request's scope did not (a policy change)
        if doc.skill in allowed and len(kept) < documents:
            kept.append(doc)
    kept.sort(key=lambda doc: (-doc.score, str(doc.note_id)))
    dropped = [name for name in names if name not in allowed]
    return Routed(scope, replace(ranking, documents=kept), kind, fell_back, dropped)
