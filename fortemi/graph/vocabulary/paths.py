"""A note's concepts as the text its tag-enriched embedding includes.

The composition root hands :class:`ConceptPaths` to the ``Embedding`` job (retrieval
asks for ``for_note(conn, note_id)`` through a protocol of its own and knows nothing of
the vocabulary). Each concept becomes its path of preferred labels along the first
broader chain, ``"information retrieval > hybrid search"``: the hierarchy says what a
narrow label is about, and a model reads "a > b" as well as any other separator.

Kept short, because every composed text shares the model's input limit with the chunk:
at most :data:`MAX_PATHS` paths (the primary concept first, then by relevance), each of
its last :data:`MAX_LEVELS` levels; a path that is the start of another one kept is
dropped (``physics`` beside ``physics > optics``).

A concept shown on more than :data:`UBIQUITY` of the memory's live notes (carried by the
note or by a narrower concept) is dropped, from its own path and from the paths it heads:
it is in nearly every text, so it moves every vector the same way and tells notes apart
no better than a stop word. The share means something only with a few notes: below
:data:`MIN_NOTES` live notes nothing is dropped.
"""

from __future__ import annotations

from uuid import UUID

from fortemi.graph.vocabulary.repository import VocabularyRepository
from fortemi.platform.database import Connection

__all__ = ["MAX_LEVELS", "MAX_PATHS", "MIN_NOTES", "UBIQUITY", "ConceptPaths"]

MAX_PATHS = 5
MAX_LEVELS = 3
UBIQUITY = 0.8
MIN_NOTES = 10


class ConceptPaths:
    """``for_note``: a note's concept paths for its embedding (see the module)."""

    def __init__(self) -> None:
        self._repo = VocabularyRepository()

    async def for_note(self, conn: Connection, note_id: UUID) -> list[str]:
        """The note's concept paths, best first, in ``conn``'s memory transaction."""
        concepts = (await self._repo.note_concepts(conn, [note_id])).get(note_id, [])
        if not concepts:
            return []
        first = await self._repo.first_broader(conn)
        chains = [_chain(c.concept_id, first) for c in concepts]
        shown = list({cid for chain in chains for cid in chain})
        dropped: set[UUID] = set()
        notes = await self._repo.live_notes(conn)
        if notes >= MIN_NOTES:
            under = await self._repo.notes_under(conn, shown)
            dropped = {cid for cid, n in under.items() if n > UBIQUITY * notes}
        kept = [
            tuple(cid for cid in chain if cid not in dropped)
            for chain in chains
            if chain[-1] not in dropped
        ]
        unique = list(dict.fromkeys(kept))
        kept = [
            path
            for path in unique
            if path and not any(len(o) > len(path) and o[: len(path)] == path for o in unique)
        ][:MAX_PATHS]
        labels = await self._repo.pref_labels(conn, list({cid for path in kept for cid in path}))
        return [" > ".join(labels.get(c, str(c)) for c in path[-MAX_LEVELS:]) for path in kept]


def _chain(concept_id: UUID, first: dict[UUID, UUID]) -> tuple[UUID, ...]:
    """The concept's ids from the top down along first broader links."""
    chain: list[UUID] = []
    current: UUID | None = concept_id
    while current is not None and current not in chain and len(chain) <= 32:
        chain.append(current)
        current = first.get(current)
    return tuple(reversed(chain))
