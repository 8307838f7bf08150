"""Explicit links: made once, repeated harmlessly, never silently re-scored."""

from __future__ import annotations

import math
from uuid import UUID

import pytest

from fortemi.graph.links import LinkKind, LinkService
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.notes import NoteService
from tests.integration.graph.links.conftest import Links, Write


async def test_a_link_is_created_once_and_an_exact_repeat_returns_it(
    link_service: LinkService, memory: str, write: Write, links: Links
) -> None:
    a, b = await write("A"), await write("B")
    made = await link_service.create_explicit(memory, a, b, 0.3, actor="alice")
    assert made.created
    assert (made.link.kind, made.link.created_by) == (LinkKind.EXPLICIT, "alice")
    again = await link_service.create_explicit(memory, a, b, 0.3, actor="bob")
    assert not again.created
    assert again.link == made.link
    found = await links(a)
    assert [(x.note.id, x.link.kind) for x in found.outgoing] == [(b, LinkKind.EXPLICIT)]
    assert math.isclose(found.outgoing[0].link.score, 0.3, rel_tol=1e-6)
    assert [x.note.id for x in (await links(b)).incoming] == [a]


async def test_a_repeat_with_another_score_is_a_conflict_naming_the_stored_score(
    link_service: LinkService, memory: str, write: Write
) -> None:
    a, b = await write("A"), await write("B")
    await link_service.create_explicit(memory, a, b, actor="t")
    with pytest.raises(Conflict) as raised:
        await link_service.create_explicit(memory, a, b, 0.5, actor="t")
    assert raised.value.extensions["existing_score"] == 1.0
    assert "score 1" in raised.value.message
    # The other direction is another link.
    assert (await link_service.create_explicit(memory, b, a, 0.5, actor="t")).created


@pytest.mark.parametrize("score", [-0.01, 1.01, math.inf, math.nan, "0.5", True])
async def test_a_score_outside_zero_to_one_is_bad_input(
    link_service: LinkService, memory: str, write: Write, score: object
) -> None:
    a, b = await write("A"), await write("B")
    with pytest.raises(BadUserInput, match="score"):
        await link_service.create_explicit(memory, a, b, score, actor="t")  # type: ignore[arg-type]


async def test_no_self_links_no_missing_notes_no_deleted_notes(
    link_service: LinkService, notes: NoteService, memory: str, write: Write
) -> None:
    a, b = await write("A"), await write("B")
    with pytest.raises(BadUserInput, match="itself"):
        await link_service.create_explicit(memory, a, a, actor="t")
    with pytest.raises(NotFound):
        await link_service.create_explicit(memory, a, UUID(int=1), actor="t")
    await notes.delete(memory, b, actor="t")
    with pytest.raises(Conflict, match="deleted"):
        await link_service.create_explicit(memory, a, b, actor="t")


async def test_the_source_must_still_have_the_owner_the_caller_was_authorized_for(
    link_service: LinkService, memory: str, write: Write
) -> None:
    a, b = await write("A", project="p1"), await write("B")
    with pytest.raises(Conflict, match="moved"):
        await link_service.create_explicit(memory, a, b, actor="t", owner=("p2", None))


async def test_deleting_removes_only_the_explicit_link_and_repeating_is_a_no_op(
    link_service: LinkService, memory: str, write: Write, links: Links
) -> None:
    b = await write("B")
    a = await write("A", "[[B]]")
    await link_service.create_explicit(memory, a, b, actor="t")
    removed = await link_service.delete_explicit(memory, a, b)
    assert removed is not None
    assert removed.kind is LinkKind.EXPLICIT
    assert await link_service.delete_explicit(memory, a, b) is None
    assert [x.link.kind for x in (await links(a)).outgoing] == [LinkKind.WIKI]
