"""The numbers an answer cites: kept when they name a selected chunk, else counted."""

from __future__ import annotations

import uuid

from fortemi.wiki.answers.citations import cited
from fortemi.wiki.retrieve.models import Candidate


def _chunks(n: int) -> list[Candidate]:
    return [
        Candidate(
            chunk_id=i,
            note_id=uuid.uuid4(),
            title=f"t{i}",
            path=f"p{i}.md",
            project=None,
            skill=None,
            ordinal=0,
            heading=None,
            text="x",
            tfidf=0.0,
            metadata=0.0,
            semantic=None,
        )
        for i in range(n)
    ]


def test_single_lists_and_adjacent_marks_are_read_in_order_of_first_mention() -> None:
    chunks = _chunks(3)
    found, dropped = cited("A [2]. B [1, 3][2] and [ 3 ; 1 ].", chunks)
    assert [(c.number, c.chunk.path) for c in found] == [(2, "p1.md"), (1, "p0.md"), (3, "p2.md")]
    assert dropped == 0


def test_numbers_naming_no_chunk_are_dropped_and_counted_once_each() -> None:
    found, dropped = cited("See [0], [4], [4] and [1].", _chunks(3))
    assert [c.number for c in found] == [1]
    assert dropped == 2


def test_brackets_that_are_not_citations_are_ignored() -> None:
    found, dropped = cited("Use arr[i] or [x, 1] or [] or a link [text](url).", _chunks(3))
    assert (found, dropped) == ([], 0)
