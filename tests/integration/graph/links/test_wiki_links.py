"""Wiki links kept in step with notes, in each note's own transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from uuid import UUID

import pytest

from fortemi.graph.links import WikiLinkIndexer
from fortemi.graph.links.models import LinkKind, NoteLinks
from fortemi.platform.database import Database
from fortemi.platform.notes import (
    ChangePolicy,
    ExternalItem,
    NameSet,
    NoteDraft,
    NotePatch,
    NoteService,
    NoteVisibility,
)
from tests.integration.graph.links.conftest import Links, Write


def _targets(found: NoteLinks) -> list[UUID]:
    return [linked.note.id for linked in found.outgoing]


def _sources(found: NoteLinks) -> list[UUID]:
    return [linked.note.id for linked in found.incoming]


async def _edges(db: Database, memory: str) -> set[tuple[UUID, UUID]]:
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch("SELECT source_id, target_id FROM note_link WHERE kind = 'wiki'")
    return {(row["source_id"], row["target_id"]) for row in rows}


async def test_references_resolve_by_title_alias_and_path_whatever_their_case(
    write: Write, links: Links
) -> None:
    by_title = await write("Project Plan")
    by_front_alias = await write("Budget 2026", "---\naliases: [money]\n---\nFigures.")
    by_meta_alias = await write("Roadmap", metadata={"aliases": ["The Way"]})
    by_path = await write("Minutes", metadata={"path": "meetings/2026/minutes.md"})
    source = await write(
        "Hub",
        "[[project plan]] [[MONEY|cash]] [[the way#Q3]] [[meetings/2026/minutes.md]] "
        "![[Meetings/2026/Minutes]] [[Nowhere]]",
    )
    found = await links(source)
    assert sorted(_targets(found)) == sorted([by_title, by_front_alias, by_meta_alias, by_path])
    assert {linked.link.kind for linked in found.outgoing} == {LinkKind.WIKI}
    assert {linked.link.score for linked in found.outgoing} == {1.0}
    assert [(d.target, d.embed) for d in found.dangling] == [("Nowhere", False)]
    assert _sources(await links(by_path)) == [source]


async def test_a_dangling_reference_resolves_when_its_note_is_created(
    write: Write, links: Links
) -> None:
    source = await write("Index", "Read [[Later Note]] and [[Later Note#Intro|this]].")
    assert [d.target for d in (await links(source)).dangling] == ["Later Note", "Later Note"]
    later = await write("later note")
    found = await links(source)
    assert _targets(found) == [later]
    assert found.dangling == []
    assert _sources(await links(later)) == [source]


async def test_retitling_moves_references_from_the_old_title_to_the_new(
    notes: NoteService, memory: str, write: Write, links: Links
) -> None:
    old_refs = await write("A", "[[Draft]]")
    new_refs = await write("B", "[[Final]]")
    note = await write("Draft")
    assert _targets(await links(old_refs)) == [note]
    await notes.update(memory, note, NotePatch(title="Final"), actor="t")
    assert _targets(await links(old_refs)) == []
    assert [d.target for d in (await links(old_refs)).dangling] == ["Draft"]
    assert _targets(await links(new_refs)) == [note]


async def test_an_alias_gained_by_an_edit_resolves_references_to_it(
    notes: NoteService, memory: str, write: Write, links: Links
) -> None:
    source = await write("S", "[[nickname]]")
    target = await write("Formal name")
    await notes.update(
        memory, target, NotePatch(content="---\naliases: nickname\n---\nbody"), actor="t"
    )
    assert _targets(await links(source)) == [target]


async def test_edits_replace_the_links_and_edges_mirror_references_one_per_target(
    notes: NoteService, memory: str, db: Database, write: Write, links: Links
) -> None:
    one, two = await write("One"), await write("Two")
    source = await write("Source", "[[One]] [[one|again]] [[Source]] [[Two]] `[[Two]]`")
    assert await _edges(db, memory) == {(source, one), (source, two)}
    await notes.update(
        memory, source, NotePatch(content="only [[Two]]\n```\n[[One]]\n```"), actor="t"
    )
    assert await _edges(db, memory) == {(source, two)}
    assert _sources(await links(one)) == []
    # A change that makes no version (an attribute) leaves the links as they are.
    await notes.update(memory, source, NotePatch(starred=True), actor="t")
    assert await _edges(db, memory) == {(source, two)}


async def test_the_oldest_note_keeps_a_title_and_a_title_beats_an_alias(
    write: Write, links: Links
) -> None:
    first = await write("Shared")
    await write("Shared")  # a newer note with the same title takes nothing
    aliased = await write("Other", metadata={"aliases": ["Pick me"]})
    source = await write("S", "[[Shared]] [[Pick me]]")
    assert set(_targets(await links(source))) == {first, aliased}
    titled = await write("Pick Me")
    assert set(_targets(await links(source))) == {first, titled}


async def test_a_path_reference_prefers_the_note_at_that_path(write: Write, links: Links) -> None:
    titled = await write("docs/setup")
    at_path = await write("Setup guide", metadata={"path": "docs/setup.md"})
    source = await write("S", "[[docs/setup]]")
    assert _targets(await links(source)) == [at_path]
    assert titled != at_path


async def test_relative_paths_start_from_the_source_notes_folder(
    write: Write, links: Links
) -> None:
    target = await write("Budget", metadata={"path": "projects/shared/budget.md"})
    source = await write("Plan", "[[../shared/budget.md]]", metadata={"path": "projects/a/plan.md"})
    assert _targets(await links(source)) == [target]


async def test_notes_upserted_together_link_to_each_other(
    notes: NoteService, memory: str, links: Links
) -> None:
    results = await notes.upsert_external(
        memory,
        "vault",
        [
            ExternalItem("a", title="Alpha", content="see [[Beta]]"),
            ExternalItem("b", title="Beta", content="see [[Alpha]]"),
        ],
        ChangePolicy.VERSION,
        actor="t",
    )
    alpha, beta = (result.note.id for result in results)
    assert _targets(await links(alpha)) == [beta]
    assert _targets(await links(beta)) == [alpha]


async def test_links_to_unreadable_and_deleted_notes_are_left_out(
    notes: NoteService, memory: str, write: Write, links: Links
) -> None:
    open_note = await write("Open", project="p1")
    hidden = await write("Hidden", project="secret")
    gone = await write("Gone")
    source = await write("S", "[[Open]] [[Hidden]] [[Gone]]", project="p1")
    await write("Back", "[[S]]", project="secret")
    only_p1 = NoteVisibility(
        memory_notes=True, projects=NameSet(frozenset({"p1"})), skills=NameSet(frozenset())
    )
    await notes.delete(memory, gone, actor="t")
    found = await links(source, only_p1)
    assert _targets(found) == [open_note]
    assert found.incoming == []
    # Not dangling either: the reference names a note, one this caller may not see.
    assert found.dangling == []
    assert hidden in _targets(await links(source))
    await notes.restore(memory, gone, actor="t")
    assert gone in _targets(await links(source, only_p1))


async def test_a_note_created_while_another_references_it_is_never_left_dangling(
    notes: NoteService, memory: str, write: Write, links: Links
) -> None:
    # The two transactions lock the key they share: whichever commits second sees the
    # other, whatever the interleaving.
    for round_ in range(8):
        source, target = await asyncio.gather(
            write(f"Source {round_}", f"[[Target {round_}]]"), write(f"Target {round_}")
        )
        assert _targets(await links(source)) == [target], round_


class _Failing:
    """An indexer after the wiki one that fails: the note's transaction rolls back."""

    async def enqueue(
        self, conn: object, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[object]:
        raise RuntimeError("the next indexer failed")

    async def committed(self, pending: Sequence[object]) -> None:
        raise AssertionError("never reached")


async def test_links_are_written_in_the_notes_transaction_and_roll_back_with_it(
    db: Database, memory: str, write: Write, links: Links
) -> None:
    source = await write("S", "[[Never made]]")
    failing = NoteService(
        db,
        max_note_bytes=1_048_576,
        max_page_size=100,
        max_upsert_batch=500,
        indexers=[WikiLinkIndexer(None), _Failing()],
    )
    with pytest.raises(RuntimeError, match="next indexer"):
        await failing.create(memory, NoteDraft(title="Never made"), actor="t")
    found = await links(source)
    assert found.outgoing == []
    assert [d.target for d in found.dangling] == ["Never made"]
    assert await _edges(db, memory) == set()


async def test_a_note_in_the_trash_keeps_references_until_a_live_note_takes_its_title(
    notes: NoteService, memory: str, write: Write, links: Links
) -> None:
    binned = await write("Binned")
    await notes.delete(memory, binned, actor="t")
    # Written while the note is in the trash: resolved to it, listed once it is back.
    source = await write("S", "[[Binned]]")
    found = await links(source)
    assert (found.outgoing, found.dangling) == ([], [])
    await notes.restore(memory, binned, actor="t")
    assert _targets(await links(source)) == [binned]
    # Binned again, and a live note takes the title: the reference follows it.
    await notes.delete(memory, binned, actor="t")
    successor = await write("binned")
    assert _targets(await links(source)) == [successor]


async def test_two_notes_edited_at_once_to_link_each_other_both_commit(
    notes: NoteService, memory: str, write: Write, links: Links
) -> None:
    # Each edit holds its own note's row lock while its wiki edge needs the other note as
    # a foreign key: a row lock that blocked key-share locks would make them deadlock.
    for round_ in range(4):
        a, b = await write(f"A{round_}"), await write(f"B{round_}")
        await asyncio.gather(
            notes.update(memory, a, NotePatch(content=f"[[B{round_}]]"), actor="t"),
            notes.update(memory, b, NotePatch(content=f"[[A{round_}]]"), actor="t"),
        )
        assert (_targets(await links(a)), _targets(await links(b))) == ([b], [a])
