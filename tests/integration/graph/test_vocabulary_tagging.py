"""Tagging notes with concept paths: reuse by label, creation as candidates, sources,
primary, literary warrant, limits, and that a note's row and version never change."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService


def _p(path: str, *, dimension: str | None = "topic", primary: bool = False) -> ConceptProposal:
    return ConceptProposal(tuple(path.split("/")), dimension, 0.75, 0.5, primary)


async def _note(notes: NoteService, memory: str, tags: tuple[str, ...] = ()) -> UUID:
    note = await notes.create(memory, NoteDraft(title="n", content="c", tags=tags), actor="a")
    return note.id


async def _status(db: Database, memory: str, concept_id: UUID) -> str:
    async with db.memory_transaction(memory) as conn:
        status: str = await conn.fetchval("SELECT status FROM concept WHERE id = $1", concept_id)
    return status


async def _broader(db: Database, memory: str) -> set[tuple[str, str]]:
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT ls.label AS narrower, lt.label AS broader FROM concept_relation r "
            "JOIN concept_label ls ON ls.concept_id = r.source_id AND ls.kind = 'pref' "
            "JOIN concept_label lt ON lt.concept_id = r.target_id AND lt.kind = 'pref' "
            "WHERE r.kind = 'broader'"
        )
    return {(r["narrower"], r["broader"]) for r in rows}


async def test_a_path_creates_one_candidate_per_component_wired_broader_to_narrower(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    note_id = await _note(tagged_notes, memory)
    attached = await vocabulary.tag_note(
        memory, note_id, [_p("ml/transformers/attention")], source="api", actor="a"
    )

    assert [c.label for c in attached] == ["attention"]
    assert await _broader(db, memory) == {("transformers", "ml"), ("attention", "transformers")}
    index = await vocabulary.label_index(memory)
    assert {e.label: e.path for e in index} == {
        "ml": ("ml",),
        "transformers": ("ml", "transformers"),
        "attention": ("ml", "transformers", "attention"),
    }
    assert await _status(db, memory, attached[0].concept_id) == "candidate"


async def test_components_reuse_concepts_by_any_label_case_insensitively(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    first = await _note(tagged_notes, memory)
    second = await _note(tagged_notes, memory)
    [ml] = await vocabulary.tag_note(memory, first, [_p("ML")], source="api", actor="a")
    async with db.memory_transaction(memory) as conn:
        await conn.execute(
            "INSERT INTO concept_label (concept_id, kind, label) VALUES ($1, 'alt', 'Machine learning')",
            ml.concept_id,
        )

    [leaf] = await vocabulary.tag_note(
        memory, second, [_p("machine LEARNING/Transformers")], source="api", actor="a"
    )

    assert await _broader(db, memory) == {("Transformers", "ML")}
    async with db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM concept") == 2
    assert leaf.label == "Transformers"


async def test_tagging_never_changes_the_notes_row_nor_its_version(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    note_id = await _note(tagged_notes, memory)
    before = await tagged_notes.get(memory, note_id)

    await vocabulary.tag_note(memory, note_id, [_p("a/b"), _p("c")], source="ai_auto", actor=None)

    assert await tagged_notes.get(memory, note_id) == before
    assert len(await tagged_notes.versions(memory, note_id)) == 1


async def test_ai_retagging_replaces_earlier_ai_concepts_but_keeps_api_ones(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    note_id = await _note(tagged_notes, memory)
    await vocabulary.tag_note(memory, note_id, [_p("kept")], source="api", actor="a")
    await vocabulary.tag_note(
        memory, note_id, [_p("old"), _p("kept", primary=True)], source="ai_auto", actor=None
    )

    await vocabulary.tag_note(memory, note_id, [_p("new")], source="ai_auto", actor=None)

    concepts = (await vocabulary.note_concepts(memory, [note_id]))[note_id]
    assert {(c.label, c.source) for c in concepts} == {("kept", "api"), ("new", "ai_auto")}


async def test_at_most_one_primary_and_ai_never_takes_it_from_a_person(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    note_id = await _note(tagged_notes, memory)
    await vocabulary.tag_note(memory, note_id, [_p("a", primary=True)], source="api", actor="a")
    await vocabulary.tag_note(
        memory, note_id, [_p("b", primary=True)], source="ai_auto", actor=None
    )
    concepts = (await vocabulary.note_concepts(memory, [note_id]))[note_id]
    assert [c.label for c in concepts if c.primary] == ["a"]

    await vocabulary.tag_note(memory, note_id, [_p("c", primary=True)], source="api", actor="a")
    concepts = (await vocabulary.note_concepts(memory, [note_id]))[note_id]
    assert [c.label for c in concepts if c.primary] == ["c"]


async def test_a_candidate_becomes_controlled_with_its_third_note(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    ids = [await _note(tagged_notes, memory) for _ in range(3)]
    [first] = await vocabulary.tag_note(memory, ids[0], [_p("x/y")], source="api", actor="a")
    await vocabulary.tag_note(memory, ids[1], [_p("x/y")], source="api", actor="a")
    assert await _status(db, memory, first.concept_id) == "candidate"

    await vocabulary.tag_note(memory, ids[2], [_p("X/Y")], source="ai_auto", actor=None)

    assert await _status(db, memory, first.concept_id) == "controlled"
    labels = await vocabulary.labels(memory, [first.concept_id])
    parent = next(e for e in await vocabulary.label_index(memory) if e.label == "x")
    # Warrant counts the notes carrying the concept itself: the broader one has none.
    assert await _status(db, memory, parent.concept_id) == "candidate"
    assert labels == {first.concept_id: "y"}


async def test_tagging_a_missing_or_deleted_note_is_not_found(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    with pytest.raises(NotFound):
        await vocabulary.tag_note(memory, uuid4(), [_p("a")], source="api", actor="a")
    note_id = await _note(tagged_notes, memory)
    await tagged_notes.delete(memory, note_id, actor="a")
    with pytest.raises(NotFound, match="deleted"):
        await vocabulary.tag_note(memory, note_id, [_p("a")], source="api", actor="a")


async def test_paths_past_the_limits_are_refused_for_api_and_skipped_for_ai(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    note_id = await _note(tagged_notes, memory)
    with pytest.raises(BadUserInput) as deep:
        await vocabulary.tag_note(memory, note_id, [_p("a/b/c/d/e/f")], source="api", actor="a")
    assert deep.value.extensions["reason"] == "max_depth"

    await vocabulary.tag_note(memory, note_id, [_p("p/q")], source="api", actor="a")
    with pytest.raises(BadUserInput) as cycle:
        await vocabulary.tag_note(memory, note_id, [_p("q/p")], source="api", actor="a")
    assert cycle.value.extensions["reason"] == "cycle"

    for parent in ("r1", "r2", "r3"):
        await vocabulary.tag_note(
            memory, note_id, [_p(f"{parent}/shared")], source="api", actor="a"
        )
    with pytest.raises(BadUserInput) as wide:
        await vocabulary.tag_note(memory, note_id, [_p("r4/shared")], source="api", actor="a")
    assert wide.value.extensions["reason"] == "max_broader"

    attached = await vocabulary.tag_note(
        memory, note_id, [_p("q/p"), _p("fine")], source="ai_auto", actor=None
    )
    assert [c.label for c in attached] == ["fine"]


async def test_malformed_proposals_are_bad_input_whatever_the_source(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    note_id = await _note(tagged_notes, memory)
    for bad in (
        ConceptProposal((), None, 0.5, 0.5),
        ConceptProposal(("a", ""), None, 0.5, 0.5),
        ConceptProposal(("a",), "colour", 0.5, 0.5),
        ConceptProposal(("a",), None, 1.5, 0.5),
        ConceptProposal(("a",), None, 0.5, float("nan")),
    ):
        with pytest.raises(BadUserInput):
            await vocabulary.tag_note(memory, note_id, [bad], source="ai_auto", actor=None)


async def test_path_tags_in_note_tags_become_user_concepts_without_a_new_version(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    note_id = await _note(tagged_notes, memory, tags=("ml/nlp", "todo", "ml / vision /"))
    concepts = (await vocabulary.note_concepts(memory, [note_id]))[note_id]
    assert {(c.label, c.source) for c in concepts} == {("nlp", "user"), ("vision", "user")}
    assert len(await tagged_notes.versions(memory, note_id)) == 1

    await tagged_notes.update(memory, note_id, NotePatch(tags=["ml/nlp"]), actor="a")

    concepts = (await vocabulary.note_concepts(memory, [note_id]))[note_id]
    assert {c.label for c in concepts} == {"nlp"}
    assert len(await tagged_notes.versions(memory, note_id)) == 2


async def test_relate_writes_both_directions_once_and_counts_new_pairs(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    note_id = await _note(tagged_notes, memory)
    a, b, c = await vocabulary.tag_note(
        memory, note_id, [_p("a"), _p("b"), _p("c")], source="api", actor="x"
    )
    pairs = [(a.concept_id, b.concept_id, 0.8), (b.concept_id, a.concept_id, 0.9)]

    assert await vocabulary.relate(memory, pairs, created_by="job") == 1
    assert (
        await vocabulary.relate(
            memory, [*pairs, (a.concept_id, c.concept_id, 0.5)], created_by="job"
        )
        == 1
    )
    async with db.memory_transaction(memory) as conn:
        assert (
            await conn.fetchval("SELECT count(*) FROM concept_relation WHERE kind = 'related'") == 4
        )
    with pytest.raises(NotFound):
        await vocabulary.relate(memory, [(a.concept_id, uuid4(), 0.5)], created_by="job")


async def test_concept_ids_lists_every_asked_note(
    tagged_notes: NoteService, vocabulary: VocabularyService, memory: str
) -> None:
    tagged = await _note(tagged_notes, memory)
    bare = await _note(tagged_notes, memory)
    [a] = await vocabulary.tag_note(memory, tagged, [_p("a")], source="api", actor="x")

    assert await vocabulary.concept_ids(memory, [tagged, bare]) == {
        tagged: frozenset({a.concept_id}),
        bare: frozenset(),
    }
