"""The vocabulary counts how often concepts meet on the memory's live notes (what
related-concept inference weighs pairs by), so no other feature reads its tables."""

from __future__ import annotations

from uuid import UUID

from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.platform.notes import NoteDraft, NoteService


async def _tagged(
    notes: NoteService, vocabulary: VocabularyService, memory: str, *labels: str
) -> dict[str, UUID]:
    note = await notes.create(memory, NoteDraft(title="n", content="c"), actor="t")
    attached = await vocabulary.tag_note(
        memory,
        note.id,
        [ConceptProposal((label,), "topic", 0.9, 0.9) for label in labels],
        source="api",
        actor="t",
    )
    return {c.label: c.concept_id for c in attached} | {"note": note.id}


async def test_cooccurrence_counts_live_notes_alone_and_in_pairs(
    notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    first = await _tagged(notes, vocabulary, memory, "graphs", "search")
    await _tagged(notes, vocabulary, memory, "graphs", "search", "vectors")
    await _tagged(notes, vocabulary, memory, "graphs")
    deleted = await _tagged(notes, vocabulary, memory, "search", "vectors")
    await notes.delete(memory, deleted["note"], actor="t")
    graphs, search, vectors = first["graphs"], first["search"], deleted["vectors"]

    counts = await vocabulary.cooccurrence(memory, [graphs, search, vectors])

    assert counts.notes == 3
    assert counts.singles == {graphs: 3, search: 2, vectors: 1}
    assert counts.together(graphs, search) == counts.together(search, graphs) == 2
    assert counts.together(search, vectors) == 1
    assert counts.together(graphs, vectors) == 1
    assert all(a < b for a, b in counts.pairs)


async def test_cooccurrence_counts_only_the_concepts_asked_for(
    notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    tagged = await _tagged(notes, vocabulary, memory, "alpha", "beta")

    counts = await vocabulary.cooccurrence(memory, [tagged["alpha"]])

    assert counts.notes == 1
    assert counts.singles == {tagged["alpha"]: 1}
    assert counts.pairs == {}
