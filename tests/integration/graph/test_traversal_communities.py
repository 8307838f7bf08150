"""The neighbourhood's communities, labelled through the real vocabulary service."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from uuid import UUID, uuid4

import pytest

from fortemi.graph.traversal import GraphRequest, TraversalService
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import NotFound
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


class _CountingLabels:
    """The vocabulary, counting the traversal's reads of it."""

    def __init__(self, vocabulary: VocabularyService) -> None:
        self._vocabulary = vocabulary
        self.reads = 0

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, frozenset[UUID]]:
        self.reads += 1
        return await self._vocabulary.concept_ids(memory, note_ids, conn=conn)

    async def labels(
        self, memory: str, concept_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, str]:
        self.reads += 1
        return await self._vocabulary.labels(memory, concept_ids, conn=conn)


async def test_labels_come_with_the_walk_and_are_skipped_when_the_caller_asks_for_neither(
    db: Database, memory: str, vocabulary: VocabularyService, tagged_notes: NoteService
) -> None:
    a, b, c = await add_notes(tagged_notes, memory, ["a", "b", "c"])
    await add_links(db, memory, [Link(a, b, "explicit", 1.0), Link(b, c, "explicit", 1.0)])
    for note in (a, b, c):
        await vocabulary.tag_note(memory, note, [_concept("Biology")], source="api", actor="test")
    counting = _CountingLabels(vocabulary)
    service = TraversalService(db, concepts=counting)
    request = GraphRequest(depth=2)

    full = await service.neighbourhood(memory, a, request, visibility=None)
    assert {n.community_label for n in full.nodes} == {"Biology"}
    # The nodes' concepts and their labels came in the walk's own round trip.
    assert counting.reads == 0

    unlabelled = await service.neighbourhood(memory, a, request, visibility=None, labels=False)
    assert [n.community for n in unlabelled.nodes] == [n.community for n in full.nodes]
    assert {n.community_label for n in unlabelled.nodes} == {None}

    bare = await service.neighbourhood(memory, a, request, visibility=None, communities=False)
    assert {(n.community, n.community_label, n.community_confidence) for n in bare.nodes} == {
        (None, None, None)
    }
    assert counting.reads == 0
    # Everything else is the same answer.
    assert [n.id for n in bare.nodes] == [n.id for n in full.nodes]
    assert bare.edges == full.edges
    assert bare.meta == full.meta


class _FailingLabels:
    """A vocabulary whose reads fail: the walk must not need them."""

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, frozenset[UUID]]:
        raise RuntimeError("vocabulary unavailable")

    async def labels(
        self, memory: str, concept_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, str]:
        raise RuntimeError("vocabulary unavailable")


async def test_the_walk_reads_concepts_and_labels_itself_and_a_failed_walk_leaves_no_task(
    db: Database, memory: str, tagged_notes: NoteService, vocabulary: VocabularyService
) -> None:
    a, b = await add_notes(tagged_notes, memory, ["a", "b"])
    await add_links(db, memory, [Link(a, b, "explicit", 1.0)])
    for note in (a, b):
        await vocabulary.tag_note(memory, note, [_concept("Biology")], source="api", actor="t")
    service = TraversalService(db, concepts=_FailingLabels())

    found = await service.neighbourhood(memory, a, GraphRequest(), visibility=None)

    assert {n.community_label for n in found.nodes} == {"Biology"}
    before = asyncio.all_tasks()
    with pytest.raises(NotFound):
        await service.neighbourhood(memory, uuid4(), GraphRequest(), visibility=None)
    assert asyncio.all_tasks() <= before  # a failed read rolls back inline
