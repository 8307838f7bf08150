"""The pruned lexical path and the segment path (a segment built before the edits, which
reach it as its delta) return the exhaustive path's top k: the same notes, scores and
order, on random corpora after random edits, for random queries with many ties."""

from __future__ import annotations

import asyncio
import itertools
import os
from dataclasses import dataclass
from uuid import UUID

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fortemi.platform.database import Database
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService
from fortemi.platform.notes.models import NoteFilter
from fortemi.platform.settings import Settings
from fortemi.retrieval.lexical import LexicalLeg, LexicalPath, LexicalTrace
from fortemi.retrieval.query import parse_query
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.search import (
    Scope,
    SearchFilter,
    SearchMode,
    SearchRequest,
    SearchService,
)
from fortemi.retrieval.segments import Segments

# Words the English analyzer keeps as they are (no stop word, stems to itself), some rare
# and some everywhere, so notes share terms, frequencies and lengths: ties are common.
WORDS = ["kettle", "lantern", "harbor", "copper", "walnut", "meadow", "pebble", "thistle"]
# Three words are six times as likely as the others, so queries mix common and rare terms
# and the pruned path has postings to skip.
SKEWED = WORDS[:3] * 6 + WORDS[3:]
_names = itertools.count()

words = st.lists(st.sampled_from(SKEWED), min_size=1, max_size=9).map(" ".join)


@dataclass(frozen=True)
class Edit:
    kind: str  # "create", "update" or "delete"
    target: int  # which existing note (modulo how many there are)
    text: str


edits = st.lists(
    st.builds(
        Edit,
        kind=st.sampled_from(["create", "update", "delete"]),
        target=st.integers(0, 50),
        text=words,
    ),
    max_size=8,
)
queries = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join), min_size=1, max_size=4
)


async def _corpus(notes: NoteService, memory: str, texts: list[str]) -> list[UUID]:
    return [
        (await notes.create(memory, NoteDraft(content=text), actor="test")).id for text in texts
    ]


async def _edit(notes: NoteService, memory: str, ids: list[UUID], changes: list[Edit]) -> None:
    for edit in changes:
        if edit.kind == "create" or not ids:
            note = await notes.create(memory, NoteDraft(content=edit.text), actor="test")
            ids.append(note.id)
        elif edit.kind == "update":
            note_id = ids[edit.target % len(ids)]
            await notes.update(memory, note_id, NotePatch(content=edit.text), actor="test")
        else:
            await notes.delete(memory, ids.pop(edit.target % len(ids)), actor="test")


def _same(pruned: list[tuple[UUID, float]], exhaustive: list[tuple[UUID, float]]) -> bool:
    return [n for n, _ in pruned] == [n for n, _ in exhaustive] and all(
        abs(a - b) <= 1e-9 for (_, a), (_, b) in zip(pruned, exhaustive, strict=True)
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=st.lists(words, min_size=1, max_size=30),
    changes=edits,
    asked=queries,
    k=st.integers(1, 6),
)
def test_pruned_top_k_equals_exhaustive_top_k_after_random_edits(
    db: Database,
    settings: Settings,
    texts: list[str],
    changes: list[Edit],
    asked: list[str],
    k: int,
) -> None:
    # Each example runs in an event loop of its own with a pool of its own: Hypothesis
    # calls the test once per example, outside the session's loop. ``db`` migrated the
    # shared schema.
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    asyncio.run(_compare(url, texts, changes, asked, k))


async def _compare(
    url: str, texts: list[str], changes: list[Edit], asked: list[str], k: int
) -> None:
    db = await Database.connect(url, min_size=1, max_size=2)
    memories = MemoryService(db, Migrations())
    memory = f"prune{os.getpid()}_{next(_names)}"
    await memories.create(memory, created_by="test")
    try:
        notes = NoteService(db, max_note_bytes=65_536, max_page_size=100, max_upsert_batch=50)
        ids = await _corpus(notes, memory, texts)
        # The segment holds the first notes; the edits reach it as its delta.
        segments = Segments(db, budget=1_000_000)
        assert await segments.ready(memory) is not None
        await _edit(notes, memory, ids, changes)
        # No size floor, and a term with at most a third of the query's postings is rare:
        # most queries with a rare and a common word take the pruned path.
        leg = LexicalLeg(
            RetrievalRepository(), exhaustive_postings=0, rare_share=0.34, seed_share=10.0
        )
        held = LexicalLeg(RetrievalRepository(), segments=segments)
        for text in asked:
            query = parse_query(text)
            async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
                trace, traced = LexicalTrace(), LexicalTrace()
                pruned = await leg.rank(conn, memory, query, NoteFilter(), k, trace=trace)
                exhaustive = await leg.rank(conn, memory, query, NoteFilter(), k, pruning=False)
                segment = await held.rank(conn, memory, query, NoteFilter(), k, trace=traced)
            event(f"{trace.path.value} path")
            assert traced.path is LexicalPath.SEGMENT
            assert _same(pruned, exhaustive), (text, trace, pruned, exhaustive)
            assert _same(segment, exhaustive), (text, changes, segment, exhaustive)
        await segments.close()
    finally:
        await memories.delete(memory, confirm=memory)
        await db.close()


async def test_the_property_exercises_the_pruned_path_with_skipped_postings(
    db: Database, memory: str
) -> None:
    """One rare word among common ones: the pruned path runs and reads fewer postings."""
    notes = NoteService(db, max_note_bytes=65_536, max_page_size=100, max_upsert_batch=50)
    for i in range(60):
        text = "kettle lantern harbor " * (1 + i % 3) + ("walnut" if i % 20 == 0 else "")
        await notes.create(memory, NoteDraft(content=text), actor="test")
    leg = LexicalLeg(RetrievalRepository(), exhaustive_postings=0, rare_share=0.1, seed_share=1.0)
    query = parse_query("walnut kettle lantern")
    async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
        trace = LexicalTrace()
        pruned = await leg.rank(conn, memory, query, NoteFilter(), 3, trace=trace)
        exhaustive = await leg.rank(conn, memory, query, NoteFilter(), 3, pruning=False)
    assert trace.path is LexicalPath.PRUNED
    assert trace.postings_total == 123
    assert trace.postings_read < trace.postings_total
    assert _same(pruned, exhaustive)


async def test_filtered_pruned_search_matches_the_exhaustive_one_and_explains_it(
    db: Database, memory: str
) -> None:
    notes = NoteService(db, max_note_bytes=65_536, max_page_size=100, max_upsert_batch=50)
    for i in range(40):
        tags = ("keep",) if i % 3 == 0 else ()
        text = "copper meadow " * (1 + i % 4) + ("thistle" if i % 7 == 0 else "")
        await notes.create(memory, NoteDraft(content=text, tags=tags), actor="test")
    service = SearchService(db, None)
    scope = [Scope(memory, None)]
    outcomes = [
        await service.search(
            scope,
            SearchRequest(
                query="thistle copper meadow -pebble",
                mode=SearchMode.LEXICAL,
                limit=5,
                filter=SearchFilter(required_tags=("keep",)),
                lexical_pruning=pruning,
            ),
        )
        for pruning in (True, False)
    ]
    pruned, exhaustive = ([(h.note_id, h.score) for h in o.hits] for o in outcomes)
    assert pruned
    assert _same(pruned, exhaustive)
    assert all(h.note is not None and "keep" in h.note.tags for h in outcomes[0].hits)
    assert outcomes[1].lexical is not None
    assert outcomes[1].lexical.path == "exhaustive"
