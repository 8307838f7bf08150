"""Upserting notes from an external source by external id."""

from __future__ import annotations

import asyncio

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import (
    ChangePolicy,
    ExternalItem,
    NoteFilter,
    NotePatch,
    NoteService,
    UpsertOutcome,
)
from tests.integration.notes.helpers import MAX_UPSERT_BATCH, count_rows

CREATED, UPDATED, UNCHANGED, CONFLICT = (
    UpsertOutcome.CREATED,
    UpsertOutcome.UPDATED,
    UpsertOutcome.UNCHANGED,
    UpsertOutcome.CONFLICT,
)


def _vault() -> list[ExternalItem]:
    return [
        ExternalItem("a.md", title="A", content="alpha", tags=("x",), metadata={"n": 1}),
        ExternalItem("b.md", title="B", content="beta", project="p", collection="c"),
        ExternalItem("c.md"),
    ]


async def test_first_upsert_creates_every_item_with_its_external_key(
    notes: NoteService, memory: str
) -> None:
    results = await notes.upsert_external(
        memory, "vault", _vault(), ChangePolicy.VERSION, actor="sync"
    )

    assert [(r.external_id, r.outcome) for r in results] == [
        ("a.md", CREATED),
        ("b.md", CREATED),
        ("c.md", CREATED),
    ]
    a, b, c = (r.note for r in results)
    assert (a.title, a.content, a.tags, a.metadata, a.version) == (
        "A",
        "alpha",
        ("x",),
        {"n": 1},
        1,
    )
    assert (b.project, b.collection) == ("p", "c")
    assert (c.title, c.content, c.format, c.metadata, c.tags) == ("", "", "markdown", {}, ())
    assert {(n.external_source, n.external_id, n.source) for n in (a, b, c)} == {
        ("vault", "a.md", "vault"),
        ("vault", "b.md", "vault"),
        ("vault", "c.md", "vault"),
    }
    assert await notes.get(memory, a.id) == a
    assert [v.version for v in await notes.versions(memory, a.id)] == [1]


@pytest.mark.parametrize("policy", list(ChangePolicy))
async def test_an_exact_replay_is_unchanged_and_writes_nothing(
    notes: NoteService, memory: str, db: Database, policy: ChangePolicy
) -> None:
    first = await notes.upsert_external(memory, "vault", _vault(), policy, actor=None)
    replay = await notes.upsert_external(memory, "vault", _vault(), policy, actor=None)

    assert [r.outcome for r in replay] == [UNCHANGED] * 3
    assert [r.note for r in replay] == [r.note for r in first]  # updated_at untouched
    assert await count_rows(db, memory, "note_version") == 3


async def test_a_changed_item_under_version_keeps_the_fields_it_omits(
    notes: NoteService, memory: str
) -> None:
    [created] = await notes.upsert_external(
        memory, "vault", [_vault()[0]], ChangePolicy.VERSION, actor=None
    )
    [result] = await notes.upsert_external(
        memory, "vault", [ExternalItem("a.md", content="alpha 2")], ChangePolicy.VERSION, actor="s"
    )

    assert result.outcome is UPDATED
    note = result.note
    assert (note.title, note.content, note.tags, note.metadata) == (
        "A",
        "alpha 2",
        ("x",),
        {"n": 1},
    )
    assert (note.id, note.version) == (created.note.id, 2)
    v1 = await notes.version(memory, note.id, 1)
    assert v1 is not None
    assert v1.content == "alpha"


async def test_a_changed_item_under_replace_resets_the_fields_it_omits(
    notes: NoteService, memory: str
) -> None:
    await notes.upsert_external(memory, "vault", _vault()[:2], ChangePolicy.VERSION, actor=None)
    results = await notes.upsert_external(
        memory,
        "vault",
        [ExternalItem("a.md", content="alpha 2"), ExternalItem("b.md", title="B")],
        ChangePolicy.REPLACE,
        actor=None,
    )

    assert [r.outcome for r in results] == [UPDATED, UPDATED]
    a, b = (r.note for r in results)
    assert (a.title, a.content, a.tags, a.metadata, a.format, a.version) == (
        "",
        "alpha 2",
        (),
        {},
        "markdown",
        2,
    )
    # b's text is unchanged; only its project and collection reset: no new version.
    assert (b.title, b.content, b.project, b.collection, b.version) == ("B", "", None, None, 2)


async def test_an_item_that_only_moves_the_note_updates_it_without_a_version(
    notes: NoteService, memory: str
) -> None:
    [created] = await notes.upsert_external(
        memory, "vault", [_vault()[1]], ChangePolicy.VERSION, actor=None
    )
    [result] = await notes.upsert_external(
        memory, "vault", [ExternalItem("b.md", project="q")], ChangePolicy.VERSION, actor=None
    )
    assert result.outcome is UPDATED
    assert (result.note.project, result.note.version) == ("q", 1)
    assert result.note.updated_at > created.note.updated_at


async def test_a_changed_item_under_conflict_is_reported_and_left_alone(
    notes: NoteService, memory: str
) -> None:
    created = await notes.upsert_external(
        memory, "vault", _vault(), ChangePolicy.CONFLICT, actor=None
    )
    results = await notes.upsert_external(
        memory,
        "vault",
        [ExternalItem("a.md", content="changed"), _vault()[1], ExternalItem("new.md")],
        ChangePolicy.CONFLICT,
        actor=None,
    )

    assert [r.outcome for r in results] == [CONFLICT, UNCHANGED, CREATED]
    assert results[0].note == created[0].note  # the current note, untouched
    assert await notes.get(memory, created[0].note.id) == created[0].note


@pytest.mark.parametrize("policy", list(ChangePolicy))
async def test_a_soft_deleted_match_is_a_conflict_under_every_policy(
    notes: NoteService, memory: str, policy: ChangePolicy
) -> None:
    [created] = await notes.upsert_external(
        memory, "vault", [_vault()[0]], ChangePolicy.VERSION, actor=None
    )
    deleted = await notes.delete(memory, created.note.id, actor=None)
    # Changed or not, the item must not silently edit or resurrect the deleted note.
    for item in (ExternalItem("a.md", content="changed"), _vault()[0]):
        [result] = await notes.upsert_external(memory, "vault", [item], policy, actor=None)
        assert result.outcome is CONFLICT
        assert result.note == deleted
    assert await notes.get(memory, deleted.id) == deleted


async def test_the_same_external_id_from_another_source_is_another_note(
    notes: NoteService, memory: str
) -> None:
    [a] = await notes.upsert_external(
        memory, "one", [ExternalItem("x", content="1")], ChangePolicy.VERSION, actor=None
    )
    [b] = await notes.upsert_external(
        memory, "two", [ExternalItem("x", content="2")], ChangePolicy.VERSION, actor=None
    )
    assert (a.outcome, b.outcome) == (CREATED, CREATED)
    assert a.note.id != b.note.id


async def test_duplicate_external_ids_in_a_batch_are_refused_naming_the_id(
    notes: NoteService, memory: str, db: Database
) -> None:
    items = [ExternalItem("a.md"), ExternalItem("b.md"), ExternalItem("a.md", title="again")]
    with pytest.raises(BadUserInput, match=r"a\.md") as caught:
        await notes.upsert_external(memory, "vault", items, ChangePolicy.VERSION, actor=None)
    assert caught.value.extensions["external_id"] == "a.md"
    assert await count_rows(db, memory, "note") == 0


async def test_one_invalid_item_rejects_the_whole_batch(
    notes: NoteService, memory: str, db: Database
) -> None:
    await notes.upsert_external(memory, "vault", _vault(), ChangePolicy.VERSION, actor=None)
    before = await notes.count(memory, NoteFilter())
    items = [
        ExternalItem("a.md", content="would change"),
        ExternalItem("new.md", content="would be created"),
        ExternalItem("bad.md", title="t\x00"),
    ]
    with pytest.raises(BadUserInput) as caught:
        await notes.upsert_external(memory, "vault", items, ChangePolicy.VERSION, actor=None)

    error = caught.value
    assert "item 2" in error.message
    assert "bad.md" in error.message
    assert (error.extensions["index"], error.extensions["external_id"]) == (2, "bad.md")
    assert error.extensions["field"] == "title"
    assert await notes.count(memory, NoteFilter()) == before
    assert await count_rows(db, memory, "note_version") == 3


@pytest.mark.parametrize("size", [0, MAX_UPSERT_BATCH + 1])
async def test_a_batch_outside_1_to_the_limit_is_refused(
    notes: NoteService, memory: str, db: Database, size: int
) -> None:
    items = [ExternalItem(f"{i}.md") for i in range(size)]
    with pytest.raises(BadUserInput, match="FORTEMI_MAX_UPSERT_BATCH") as caught:
        await notes.upsert_external(memory, "vault", items, ChangePolicy.VERSION, actor=None)
    assert caught.value.extensions["limit"] == MAX_UPSERT_BATCH
    assert await count_rows(db, memory, "note") == 0


async def test_a_batch_of_exactly_the_limit_is_accepted(notes: NoteService, memory: str) -> None:
    items = [ExternalItem(f"{i}.md") for i in range(MAX_UPSERT_BATCH)]
    results = await notes.upsert_external(memory, "vault", items, ChangePolicy.VERSION, actor=None)
    assert [r.outcome for r in results] == [CREATED] * MAX_UPSERT_BATCH


@pytest.mark.parametrize("source", ["", "s\x00", "s" * 201])
async def test_an_invalid_source_is_refused(notes: NoteService, memory: str, source: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        await notes.upsert_external(
            memory, source, [ExternalItem("a")], ChangePolicy.VERSION, actor=None
        )
    assert caught.value.extensions["field"] == "source"


async def test_an_unknown_policy_is_refused(notes: NoteService, memory: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        await notes.upsert_external(memory, "vault", [ExternalItem("a")], "MERGE", actor=None)  # type: ignore[arg-type]
    assert caught.value.extensions["field"] == "on_change"


async def test_a_note_edited_locally_is_updated_from_its_current_state(
    notes: NoteService, memory: str
) -> None:
    [created] = await notes.upsert_external(
        memory, "vault", [_vault()[0]], ChangePolicy.VERSION, actor=None
    )
    await notes.update(memory, created.note.id, NotePatch(title="Local title"), actor=None)
    [result] = await notes.upsert_external(
        memory, "vault", [ExternalItem("a.md", content="remote")], ChangePolicy.VERSION, actor=None
    )
    assert (result.note.title, result.note.content, result.note.version) == (
        "Local title",
        "remote",
        3,
    )


async def test_concurrent_batches_on_the_same_ids_serialise(
    notes: NoteService, memory: str, db: Database
) -> None:
    items = [ExternalItem(f"{i}.md", content=f"body {i}") for i in range(MAX_UPSERT_BATCH)]
    first, second = await asyncio.gather(
        notes.upsert_external(memory, "vault", items, ChangePolicy.VERSION, actor=None),
        notes.upsert_external(memory, "vault", items, ChangePolicy.VERSION, actor=None),
    )
    outcomes = sorted(({r.outcome for r in first}, {r.outcome for r in second}), key=str)
    assert outcomes == [{CREATED}, {UNCHANGED}]
    assert await count_rows(db, memory, "note") == MAX_UPSERT_BATCH
    assert await count_rows(db, memory, "note_version") == MAX_UPSERT_BATCH
