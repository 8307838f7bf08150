"""The segment's snapshot order and its exact top k, against BM25 written out by hand."""

from __future__ import annotations

import math
from uuid import UUID

import numpy as np
import pytest

from fortemi.retrieval.segment import Delta, Segment, Snapshot, TermPostings, rank


def _id(n: int) -> UUID:
    return UUID(int=n)


def test_a_snapshot_parses_from_its_text_form() -> None:
    assert Snapshot.parse("10:20:12,15") == Snapshot(10, 20, frozenset({12, 15}))
    assert Snapshot.parse("7:7:") == Snapshot(7, 7, frozenset())


@pytest.mark.parametrize(
    ("earlier", "later", "precedes"),
    [
        ("10:20:12", "10:20:12", True),  # the same snapshot
        ("10:20:12", "15:30:12,25", True),  # 12 still running in both
        ("10:20:", "18:30:25", True),
        ("10:20:", "10:18:", False),  # saw transactions the query had not seen start
        ("10:20:12", "10:20:", True),  # 12 finished since: the delta has it
        ("10:20:", "10:20:12", False),  # it saw 12 finished, the query sees it running
    ],
)
def test_a_segment_snapshot_precedes_a_query_only_if_it_saw_nothing_the_query_cannot(
    earlier: str, later: str, precedes: bool
) -> None:
    assert Snapshot.parse(earlier).precedes(Snapshot.parse(later)) is precedes


def _segment(docs: dict[int, dict[str, int]]) -> Segment:
    ids = sorted(docs)
    terms: dict[str, list[tuple[int, int]]] = {}
    for i, n in enumerate(ids):
        for lexeme, tf in docs[n].items():
            terms.setdefault(lexeme, []).append((i, tf))
    postings = {
        t: TermPostings(
            np.array([i for i, _ in p], dtype=np.int32), np.array([f for _, f in p], dtype=np.int32)
        )
        for t, p in terms.items()
    }
    lengths = [sum(docs[n].values()) for n in ids]
    return Segment.of(Snapshot(1, 1, frozenset()), 1, [_id(n) for n in ids], lengths, postings)


def _bm25(
    docs: dict[int, dict[str, int]], query: dict[str, float], k1: float, b: float
) -> list[tuple[UUID, float]]:
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs.values()) / n
    scores: dict[int, float] = {}
    for lexeme, qtf in query.items():
        df = sum(1 for d in docs.values() if lexeme in d)
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for note, d in docs.items():
            if lexeme in d:
                dl, tf = sum(d.values()), d[lexeme]
                scores[note] = scores.get(note, 0.0) + qtf * idf * tf * (k1 + 1) / (
                    tf + k1 * (1 - b + b * dl / avgdl)
                )
    ranked = sorted(((_id(n), round(s, 9)) for n, s in scores.items()), key=lambda h: (-h[1], h[0]))
    return ranked


def _close(a: list[tuple[UUID, float]], b: list[tuple[UUID, float]]) -> bool:
    return [x for x, _ in a] == [y for y, _ in b] and all(
        abs(x - y) <= 1e-9 for (_, x), (_, y) in zip(a, b, strict=True)
    )


BEFORE = {
    1: {"copper": 2, "kettle": 1},
    2: {"copper": 1, "kettle": 1},  # tied with 3
    3: {"kettle": 1, "copper": 1},
    4: {"walnut": 3},
    5: {"copper": 1, "walnut": 1, "meadow": 4},
}


def test_the_top_k_is_bm25_with_ties_broken_by_note_id() -> None:
    query = {"copper": 1.0, "kettle": 1.0}
    found = rank(_segment(BEFORE), Delta(), list(query.items()), 4, k1=1.2, b=0.75)
    expected = _bm25(BEFORE, query, 1.2, 0.75)
    assert _close(found.found, expected[:4])
    order = [n for n, _ in found.found]
    scores = dict(found.found)
    assert scores[_id(2)] == scores[_id(3)]  # the same terms and length: a tie...
    assert order.index(_id(2)) + 1 == order.index(_id(3))  # ...decided by id
    cut = rank(
        _segment(BEFORE), Delta(), list(query.items()), order.index(_id(2)) + 1, k1=1.2, b=0.75
    )
    assert [n for n, _ in cut.found][-1] == _id(2)  # a k cutting through the tie keeps the lower id
    assert found.total == 4 + 3  # copper in 4 notes, kettle in 3


def test_a_delta_replaces_changed_notes_removes_gone_ones_and_adds_new_ones() -> None:
    after = {k: v for k, v in BEFORE.items() if k != 4}  # 4 gone
    after[1] = {"walnut": 1}  # 1 changed
    after[6] = {"copper": 5, "walnut": 2}  # 6 new
    delta = Delta(
        changed=frozenset({_id(1), _id(4), _id(6)}),
        lengths={_id(1): 1, _id(6): 7},
        postings={"walnut": [(_id(1), 1), (_id(6), 2)], "copper": [(_id(6), 5)]},
    )
    query = {"walnut": 1.0, "copper": 2.0}
    found = rank(_segment(BEFORE), delta, list(query.items()), 10, k1=1.2, b=0.75)
    assert _close(found.found, _bm25(after, query, 1.2, 0.75))
    assert found.docs == 5
    assert found.avgdl == pytest.approx(sum(sum(d.values()) for d in after.values()) / 5)


def test_an_empty_corpus_ranks_nothing() -> None:
    gone = Delta(changed=frozenset(_id(n) for n in BEFORE))
    found = rank(_segment(BEFORE), gone, [("copper", 1.0)], 5, k1=1.2, b=0.75)
    assert found.found == []
    assert found.docs == 0
