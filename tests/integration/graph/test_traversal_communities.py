"""The neighbourhood's communities, labelled through the real vocabulary service."""

from __future__ import annotations

from fortemi.graph.traversal import GraphRequest, TraversalService
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteService
from tests.support.traversal import Link, add_links, add_notes


def _concept(label: str) -> ConceptProposal:
    return ConceptProposal(path=(label,), dimension="topic", confidence=0.9, relevance=0.9)


async def test_each_community_is_labelled_by_the_concept_most_of_its_notes_carry(
    db: Database, memory: str, vocabulary: VocabularyService, tagged_notes: NoteService
) -> None:
    a1, a2, a3, b1, b2, b3 = await add_notes(
        tagged_notes, memory, ["a1", "a2", "a3", "b1", "b2", "b3"]
    )
    strong = [(a1, a2), (a2, a3), (a1, a3), (b1, b2), (b2, b3), (b1, b3)]
    await add_links(
        db,
        memory,
        [*(Link(s, t, "explicit", 1.0) for s, t in strong), Link(a1, b1, "explicit", 0.05)],
    )
    for note, carried in (
        (a1, ["Biology", "Cells"]),
        (a2, ["Biology"]),
        (a3, ["Cells", "Biology"]),
        (b1, ["Physics"]),
        (b2, ["Physics", "Optics"]),
        (b3, ["Optics"]),  # ties with Physics at 2: the smaller concept id wins, stably
    ):
        await vocabulary.tag_note(
            memory, note, [_concept(x) for x in carried], source="api", actor="test"
        )
    service = TraversalService(db, concepts=vocabulary)
    found = await service.neighbourhood(memory, a1, GraphRequest(depth=3), visibility=None)
    labels = {node.title: node.community_label for node in found.nodes}
    assert labels["a1"] == labels["a2"] == labels["a3"] == "Biology"
    assert labels["b1"] == labels["b2"] == labels["b3"]
    assert labels["b1"] in {"Physics", "Optics"}
    again = await service.neighbourhood(memory, a1, GraphRequest(depth=3), visibility=None)
    assert [n.community_label for n in again.nodes] == [n.community_label for n in found.nodes]
    # Without a vocabulary the communities stand, unlabelled.
    bare = await TraversalService(db).neighbourhood(
        memory, a1, GraphRequest(depth=3), visibility=None
    )
    assert [n.community for n in bare.nodes] == [n.community for n in found.nodes]
    assert {n.community_label for n in bare.nodes} == {None}
