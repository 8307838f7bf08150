"""Vocabulary governance at the service: labels, relations, collections, pages, deletes,
and tagging under concurrency."""

from __future__ import annotations

import asyncio
from uuid import UUID, uuid4

import pytest

from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.graph.vocabulary.catalog.service import ConceptChange, ConceptDraft
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.notes import NoteDraft, NoteService


async def _scheme(vocabulary: VocabularyService, memory: str) -> UUID:
    scheme = await vocabulary.catalog.create_scheme(memory, title="S", actor="admin")
    return scheme.id


async def test_a_pref_label_replaces_the_one_in_its_language_and_the_last_one_stays(
    vocabulary: VocabularyService, memory: str
) -> None:
    catalog = vocabulary.catalog
    scheme = await _scheme(vocabulary, memory)
    concept = await catalog.create_concept(
        memory, ConceptDraft(scheme, "Colour", lang="en-GB", alt_labels=("Hue",)), actor="a"
    )
    labels = await catalog.add_label(
        memory, concept.id, kind="pref", label="Color", lang="en-GB", actor="a"
    )
    assert sorted((x.kind, x.lang, x.label) for x in labels) == [
        ("alt", "en-gb", "Hue"),
        ("pref", "en-gb", "Color"),
    ]
    with pytest.raises(Conflict, match="alt label"):
        await catalog.add_label(
            memory, concept.id, kind="pref", label="hue", lang="en-GB", actor="a"
        )
    with pytest.raises(Conflict, match="at least one preferred"):
        await catalog.remove_label(
            memory, concept.id, kind="pref", label="Color", lang="en-GB", actor="a"
        )
    labels = await catalog.remove_label(
        memory, concept.id, kind="alt", label="HUE", lang="en-gb", actor="a"
    )
    assert [(x.kind, x.label) for x in labels] == [("pref", "Color")]
    with pytest.raises(NotFound):
        await catalog.remove_label(memory, concept.id, kind="alt", label="Hue", actor="a")
    with pytest.raises(BadUserInput, match="language tag"):
        await catalog.add_label(memory, concept.id, kind="alt", label="x", lang="en gb", actor="a")


async def test_broader_and_related_links_come_and_go(
    vocabulary: VocabularyService, memory: str
) -> None:
    catalog = vocabulary.catalog
    scheme = await _scheme(vocabulary, memory)
    a = await catalog.create_concept(memory, ConceptDraft(scheme, "A"), actor="x")
    b = await catalog.create_concept(memory, ConceptDraft(scheme, "B"), actor="x")
    await catalog.add_broader(memory, b.id, a.id, actor="x")
    assert {
        (r.source_id, r.kind, r.target_id) for r in await catalog.relations(memory, [a.id])
    } == {(b.id, "broader", a.id)}
    await catalog.remove_broader(memory, b.id, a.id, actor="x")
    await catalog.relate(memory, a.id, b.id, confidence=0.25, actor="x")
    related = await catalog.relations(memory, [a.id])
    assert {(r.source_id, r.target_id, r.confidence) for r in related} == {
        (a.id, b.id, 0.25),
        (b.id, a.id, 0.25),
    }
    with pytest.raises(Conflict):
        await catalog.add_broader(memory, b.id, a.id, actor="x")
    await catalog.unrelate(memory, b.id, a.id, actor="x")
    assert await catalog.relations(memory, [a.id]) == []
    with pytest.raises(NotFound):
        await catalog.unrelate(memory, b.id, a.id, actor="x")


async def test_relate_for_jobs_skips_pairs_on_one_hierarchy_line(
    vocabulary: VocabularyService, memory: str, tagged_notes: NoteService
) -> None:
    note = await tagged_notes.create(memory, NoteDraft(title="n"), actor="a")
    top, leaf = await vocabulary.tag_note(
        memory, note.id, [ConceptProposal(("t",), None, 1, 1), ConceptProposal(("t", "l", "m"),
        None, 1, 1)], source="api", actor="a",
    )  # fmt: skip
    other = (await vocabulary.tag_note(memory, note.id, [ConceptProposal(("o",), None, 1, 1)],
                                       source="api", actor="a"))[0]  # fmt: skip
    pairs = [(top.concept_id, leaf.concept_id, 0.9), (leaf.concept_id, other.concept_id, 0.8)]
    assert await vocabulary.relate(memory, pairs, created_by="job") == 1


async def test_concept_pages_filter_by_scheme_status_and_label_prefix(
    vocabulary: VocabularyService, memory: str
) -> None:
    catalog = vocabulary.catalog
    scheme = await _scheme(vocabulary, memory)
    other = await _scheme(vocabulary, memory)
    made = [
        await catalog.create_concept(memory, ConceptDraft(scheme, f"Term {i}"), actor="x")
        for i in range(5)
    ]
    await catalog.create_concept(memory, ConceptDraft(other, "Term elsewhere"), actor="x")
    await catalog.update_concept(memory, made[0].id, ConceptChange(status="deprecated"), actor="x")

    first = await catalog.list_concepts(memory, scheme_id=scheme, label_prefix="term", first=3)
    rest = await catalog.list_concepts(
        memory, scheme_id=scheme, label_prefix="term", first=3, after=first.end_cursor
    )
    seen = [c.id for _, c in first.items] + [c.id for _, c in rest.items]
    assert seen == [c.id for c in reversed(made)]
    assert first.has_next_page
    assert not rest.has_next_page
    deprecated = await catalog.list_concepts(memory, status="deprecated")
    assert [c.id for _, c in deprecated.items] == [made[0].id]
    assert (await catalog.list_concepts(memory, label_prefix="nothing")).items == []


async def test_deleting_a_scheme_takes_its_concepts_and_their_note_attachments(
    vocabulary: VocabularyService, memory: str, tagged_notes: NoteService, db: Database
) -> None:
    note = await tagged_notes.create(memory, NoteDraft(title="n"), actor="a")
    [attached] = await vocabulary.tag_note(
        memory, note.id, [ConceptProposal(("x",), None, 1, 1)], source="api", actor="a"
    )
    [default] = await vocabulary.catalog.schemes(memory)
    collection = await vocabulary.collections.create_collection(
        memory, scheme_id=default.id, label="C", members=[attached.concept_id], actor="a"
    )
    await vocabulary.catalog.delete_scheme(memory, default.id, actor="admin")

    assert await vocabulary.note_concepts(memory, [note.id]) == {}
    assert await vocabulary.collections.collection(memory, collection.id) is None
    with pytest.raises(NotFound):
        await vocabulary.catalog.delete_scheme(memory, default.id, actor="admin")
    with pytest.raises(NotFound):
        await vocabulary.catalog.create_concept(memory, ConceptDraft(uuid4(), "x"), actor="a")


async def test_concurrent_taggers_create_each_label_once(
    vocabulary: VocabularyService, memory: str, tagged_notes: NoteService, db: Database
) -> None:
    notes = [
        await tagged_notes.create(memory, NoteDraft(title=str(i)), actor="a") for i in range(6)
    ]
    proposals = [ConceptProposal(("shared", "child"), "topic", 0.5, 0.5)]

    await asyncio.gather(
        *(vocabulary.tag_note(memory, n.id, proposals, source="ai_auto", actor=None) for n in notes)
    )

    async with db.memory_transaction(memory) as conn:
        labels = await conn.fetch("SELECT key, count(*) AS n FROM concept_label GROUP BY key")
        status = await conn.fetchval(
            "SELECT c.status FROM concept c JOIN concept_label l ON l.concept_id = c.id "
            "WHERE l.key = 'child'"
        )
    assert {r["key"]: r["n"] for r in labels} == {"shared": 1, "child": 1}
    assert status == "controlled"
