"""A read scope that admits every note is recognised as such, and only that one."""

from __future__ import annotations

import pytest

from fortemi.platform.notes.models import NameSet, NoteFilter, NoteVisibility
from fortemi.retrieval.search import _with_scope  # the search's use of it

EVERY = NameSet(frozenset(), only=False)


def test_a_scope_reading_every_note_is_everything_and_filters_nothing() -> None:
    every = NoteVisibility(memory_notes=True, projects=EVERY, skills=EVERY)
    assert every.everything
    assert _with_scope(NoteFilter(), every) == NoteFilter()  # no condition: nothing to check


@pytest.mark.parametrize(
    "scope",
    [
        NoteVisibility(memory_notes=False, projects=EVERY, skills=EVERY),
        NoteVisibility(
            memory_notes=True, projects=NameSet(frozenset({"x"}), only=False), skills=EVERY
        ),
        NoteVisibility(memory_notes=True, projects=EVERY, skills=NameSet(frozenset(), only=True)),
        NoteVisibility(memory_notes=True, projects=NameSet(frozenset({"x"})), skills=EVERY),
    ],
)
def test_a_scope_hiding_anything_is_kept_as_a_condition(scope: NoteVisibility) -> None:
    assert not scope.everything
    assert _with_scope(NoteFilter(), scope).visibility == scope
