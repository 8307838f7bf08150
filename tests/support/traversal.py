"""Notes and links written straight into a memory, for tests of the traversal.

Links are rows of ``note_link`` as the linking features write them; writing them here keeps
the traversal's tests independent of how links are made.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from fortemi.platform.database import Database
from fortemi.platform.notes import NoteDraft, NoteService


@dataclass(frozen=True, slots=True)
class Link:
    source: UUID
    target: UUID
    kind: str = "semantic"
    score: float = 0.8
    pruned: bool = False
    rank: int | None = None
    model: str | None = None


async def add_notes(
    notes: NoteService, memory: str, titles: list[str], *, project: str | None = None
) -> list[UUID]:
    created = []
    for title in titles:
        note = await notes.create(
            memory, NoteDraft(title=title, content=title, project=project), actor="test"
        )
        created.append(note.id)
    return created


async def add_links(db: Database, memory: str, links: list[Link]) -> None:
    async with db.memory_transaction(memory) as conn:
        await conn.executemany(
            "INSERT INTO note_link (source_id, target_id, kind, score, pruned, rank, model) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [(x.source, x.target, x.kind, x.score, x.pruned, x.rank, x.model) for x in links],
        )
