"""Syncing a source's notes: upsert a batch, restore keys that come back, prune a range
of keys, all admitted by the caller before anything is written."""

from __future__ import annotations

from fortemi.platform.notes import (
    ExternalItem,
    NoteService,
    SyncAdmission,
    SyncOutcome,
    SyncPlan,
)

SOURCE = "vault:v"


def _items(*keys: str, text: str = "x") -> list[ExternalItem]:
    return [ExternalItem(k, title=k, content=text) for k in keys]


async def _admit_all(plan: SyncPlan) -> SyncAdmission:
    keys = [key for key, *_ in plan.items] + [n.external_id or "" for n in plan.prune]
    return SyncAdmission(frozenset(keys))


async def _sync(
    notes: NoteService,
    memory: str,
    items: list[ExternalItem],
    prune: tuple[str | None, str | None] | None = (None, None),
    **extra: object,
) -> dict[str, SyncOutcome]:
    results = await notes.sync_external(
        memory,
        SOURCE,
        items,
        prune=prune,
        admit=extra.pop("admit", _admit_all),  # type: ignore[arg-type]
        actor="t",
        **extra,  # type: ignore[arg-type]
    )
    return {r.external_id: r.outcome for r in results}


async def test_a_range_prunes_only_its_own_unnamed_keys_and_kept_ones_survive(
    notes: NoteService, memory: str
) -> None:
    await _sync(notes, memory, _items("a", "b", "c", "d", "e"))
    other = await notes.upsert_external(memory, "elsewhere", _items("b"), "VERSION", actor="t")  # type: ignore[arg-type]

    done = await _sync(notes, memory, _items("a"), prune=("", "c"), keep=["c"])

    assert done == {"a": SyncOutcome.UNCHANGED, "b": SyncOutcome.DELETED}
    assert (await notes.get(memory, other[0].note.id)).deleted is False  # type: ignore[union-attr]


async def test_a_key_that_comes_back_is_restored_with_its_new_content(
    notes: NoteService, memory: str
) -> None:
    await _sync(notes, memory, _items("a", "b"))
    await _sync(notes, memory, _items("a"))

    back = await notes.sync_external(
        memory, SOURCE, _items("b", text="new"), prune=None, admit=_admit_all, actor="t"
    )

    assert back[0].outcome is SyncOutcome.RESTORED
    assert back[0].note is not None
    assert (back[0].note.deleted, back[0].note.content, back[0].note.version) == (False, "new", 2)


async def test_what_is_not_admitted_is_skipped_with_the_reason_and_not_written(
    notes: NoteService, memory: str
) -> None:
    await _sync(notes, memory, _items("keep"))

    async def refuse(plan: SyncPlan) -> SyncAdmission:
        return SyncAdmission(frozenset(), {"new": "no", "keep": "no"})

    results = await notes.sync_external(
        memory, SOURCE, _items("new"), prune=(None, None), admit=refuse, actor="t"
    )

    assert [(r.external_id, r.outcome, r.reason) for r in results] == [
        ("new", SyncOutcome.SKIPPED, "no"),
        ("keep", SyncOutcome.SKIPPED, "no"),
    ]
    assert await _sync(notes, memory, _items("keep"), prune=None) == {"keep": SyncOutcome.UNCHANGED}


async def test_a_dry_run_decides_and_writes_nothing(notes: NoteService, memory: str) -> None:
    await _sync(notes, memory, _items("a", "b"))

    dry = await _sync(notes, memory, _items("a", "c", text="changed"), dry_run=True)

    assert dry == {
        "a": SyncOutcome.UPDATED,
        "c": SyncOutcome.CREATED,
        "b": SyncOutcome.DELETED,
    }
    assert await _sync(notes, memory, _items("a", "b"), prune=None) == {
        "a": SyncOutcome.UNCHANGED,
        "b": SyncOutcome.UNCHANGED,
    }
