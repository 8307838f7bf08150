"""How many chunks the semantic leg takes for the notes it wants."""

from __future__ import annotations

import pytest

from fortemi.retrieval.semantic import MAX_CANDIDATES, candidates


@pytest.mark.parametrize(
    ("fetch", "per_note", "expected"),
    [
        (50, 1.0, 63),  # one chunk a note: a quarter more, for near ties between notes
        (300, 2.0, 750),  # two a note: two and a half
        (100, 2.5, 300),  # long notes: never more than three a note
        (350, 9.0, MAX_CANDIDATES),  # and never more than one index search returns
        (50, 0.2, 63),  # statistics lagging behind a new memory: still a quarter more
    ],
)
def test_chunks_taken_follow_the_memory_s_chunks_per_note_within_bounds(
    fetch: int, per_note: float, expected: int
) -> None:
    assert candidates(fetch, per_note) == expected
