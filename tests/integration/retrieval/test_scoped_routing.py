"""TF-IDF routing within a scope (ScopedRetrieval.route): the scores are exactly the
documented formula over the scope's notes only, the best ``documents`` are kept with ties
broken by note id, and equal notes score bit for bit the same."""

from __future__ import annotations

import math
from uuid import UUID

import pytest

from fortemi.platform.database import Database
from fortemi.platform.notes.models import NameSet, NoteVisibility
from fortemi.retrieval.scoped import NoteScope, ScopedRetrieval
from tests.integration.retrieval.conftest import Write

EVERYTHING = NameSet(frozenset(), only=False)
ALL = NoteVisibility(memory_notes=True, projects=EVERYTHING, skills=EVERYTHING)


def _scope(*notes: UUID) -> NoteScope:
    return NoteScope(ALL, None, frozenset(notes))


async def test_scores_are_the_formula_with_idf_counted_within_the_scope(
    db: Database, memory: str, write: Write
) -> None:
    a = await write(content="zebra zebra zebra lemur")
    b = await write(content="zebra otter")
    c = await write(content="lemur lemur")
    e = await write(content="otter")
    await write(content="zebra zebra")  # outside the scope: counts for no df and no N
    routed = await ScopedRetrieval(db, None).route(
        memory, "zebra lemur lemur", _scope(a, b, c, e), documents=10
    )
    idf = math.log(4 / 2) + 1  # N = 4 notes in scope; zebra in a and b, lemur in a and c
    assert routed.scope_notes == 4
    assert [(w.lexeme, w.qtf) for w in routed.weights] == [("lemur", 2.0), ("zebra", 1.0)]
    assert [w.idf for w in routed.weights] == pytest.approx([idf, idf], rel=1e-15)
    expected = {
        a: 1 * idf * (1 + math.log(3)) + 2 * idf * (1 + math.log(1)),
        c: 2 * idf * (1 + math.log(2)),
        b: 1 * idf * (1 + math.log(1)),
    }
    assert [d.note_id for d in routed.documents] == sorted(expected, key=lambda n: -expected[n])
    for doc in routed.documents:
        assert doc.score == pytest.approx(expected[doc.note_id], rel=1e-12)


async def test_the_best_documents_are_kept_and_equal_notes_tie_bit_for_bit_by_id(
    db: Database, memory: str, write: Write
) -> None:
    twins = [await write(content="otter lemur zebra zebra") for _ in range(3)]
    weaker = await write(content="otter")
    scope = _scope(*twins, weaker)
    routed = await ScopedRetrieval(db, None).route(memory, "zebra otter lemur", scope, documents=2)
    assert [d.note_id for d in routed.documents] == sorted(twins, key=str)[:2]
    first, second = routed.documents
    assert first.score == second.score  # the same terms summed in the same order
    everything = await ScopedRetrieval(db, None).route(
        memory, "zebra otter lemur", scope, documents=10
    )
    assert [d.note_id for d in everything.documents] == [*sorted(twins, key=str), weaker]
