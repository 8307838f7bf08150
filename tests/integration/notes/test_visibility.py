"""Skills as note owners, and the caller's visibility applied in SQL before paging."""

from __future__ import annotations

import pytest

from fortemi.platform.errors import BadUserInput, Conflict
from fortemi.platform.notes import (
    ChangePolicy,
    ExternalItem,
    NameSet,
    NoteDraft,
    NoteFilter,
    NotePatch,
    NoteService,
    NoteVisibility,
)

ONLY_P1 = NoteVisibility(
    memory_notes=False, projects=NameSet(frozenset({"p1"})), skills=NameSet(frozenset())
)


async def test_a_note_cannot_belong_to_a_project_and_a_skill(
    notes: NoteService, memory: str
) -> None:
    with pytest.raises(BadUserInput, match="not both"):
        await notes.create(memory, NoteDraft(project="p", skill="SKILL-x"), actor="t")
    note = await notes.create(memory, NoteDraft(project="p"), actor="t")
    with pytest.raises(BadUserInput, match="not both"):
        await notes.update(memory, note.id, NotePatch(skill="SKILL-x"), actor="t")
    moved = await notes.update(memory, note.id, NotePatch(project=None, skill="SKILL-x"), actor="t")
    assert (moved.project, moved.skill) == (None, "SKILL-x")


@pytest.mark.parametrize("skill", ["kubernetes", "SKILL-", "skill-x"])
async def test_skill_names_must_carry_the_skill_prefix(
    notes: NoteService, memory: str, skill: str
) -> None:
    with pytest.raises(BadUserInput, match="SKILL-"):
        await notes.create(memory, NoteDraft(skill=skill), actor="t")


async def test_an_upsert_item_giving_a_project_note_a_skill_rejects_the_batch(
    notes: NoteService, memory: str
) -> None:
    await notes.upsert_external(
        memory, "src", [ExternalItem("a", project="p")], ChangePolicy.VERSION, actor="t"
    )
    with pytest.raises(BadUserInput, match="not both"):
        await notes.upsert_external(
            memory, "src", [ExternalItem("a", skill="SKILL-x")], ChangePolicy.VERSION, actor="t"
        )
    replaced = await notes.upsert_external(
        memory, "src", [ExternalItem("a", skill="SKILL-x")], ChangePolicy.REPLACE, actor="t"
    )
    assert (replaced[0].note.project, replaced[0].note.skill) == (None, "SKILL-x")


async def test_visibility_selects_by_skill_then_project_then_memory(
    notes: NoteService, memory: str
) -> None:
    for title, draft in {
        "mem": NoteDraft(title="mem"),
        "p1": NoteDraft(title="p1", project="p1"),
        "p2": NoteDraft(title="p2", project="p2"),
        "s1": NoteDraft(title="s1", skill="SKILL-1"),
        "s2": NoteDraft(title="s2", skill="SKILL-2"),
    }.items():
        assert draft.title == title
        await notes.create(memory, draft, actor="t")

    async def titles(visibility: NoteVisibility) -> list[str]:
        note_filter = NoteFilter(visibility=visibility)
        page = await notes.list(memory, first=50, after=None, filter=note_filter)
        assert await notes.count(memory, note_filter) == len(page.items)
        return sorted(note.title for _, note in page.items)

    assert await titles(ONLY_P1) == ["p1"]
    all_but = NoteVisibility(
        memory_notes=True,
        projects=NameSet(frozenset({"p2"}), only=False),
        skills=NameSet(frozenset({"SKILL-2"}), only=False),
    )
    assert await titles(all_but) == ["mem", "p1", "s1"]
    nothing = NoteVisibility(memory_notes=False, projects=NameSet(), skills=NameSet())
    assert await titles(nothing) == []


async def test_unreadable_notes_that_rank_first_never_shorten_the_first_page(
    notes: NoteService, memory: str
) -> None:
    for i in range(30):
        await notes.create(memory, NoteDraft(title=f"ok{i}", project="p1"), actor="t")
    # 1,000 newer notes in an unreadable project: newest first, they would fill page one.
    hidden = [ExternalItem(f"h{i}", title="hidden", project="secret") for i in range(10)]
    for batch in range(100):
        items = [
            ExternalItem(f"{batch}-{i.external_id}", title=i.title, project=i.project)
            for i in hidden
        ]
        await notes.upsert_external(memory, "bulk", items, ChangePolicy.VERSION, actor="t")
    page = await notes.list(memory, first=20, after=None, filter=NoteFilter(visibility=ONLY_P1))
    assert [note.title for _, note in page.items] == [f"ok{i}" for i in range(29, 9, -1)]
    assert page.has_next_page


async def test_changes_authorized_for_an_owner_the_note_no_longer_has_are_refused(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(title="t", project="p1"), actor="t")
    stale = ("p2", None)  # what the caller was authorized for; the note is in p1
    with pytest.raises(Conflict, match="moved"):
        await notes.update(memory, note.id, NotePatch(title="x"), actor="t", owner=stale)
    with pytest.raises(Conflict, match="moved"):
        await notes.restore_version(memory, note.id, 1, actor="t", owner=stale)
    with pytest.raises(Conflict, match="moved"):
        await notes.delete(memory, note.id, actor="t", owner=stale)
    assert (await notes.get(memory, note.id)).deleted is False  # type: ignore[union-attr]
    await notes.delete(memory, note.id, actor="t", owner=("p1", None))
    with pytest.raises(Conflict, match="moved"):
        await notes.restore(memory, note.id, actor="t", owner=stale)
    with pytest.raises(Conflict, match="moved"):
        await notes.purge(memory, note.id, owner=stale)
    await notes.purge(memory, note.id, owner=("p1", None))
    assert await notes.get(memory, note.id) is None
