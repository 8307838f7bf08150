"""The semantic leg with the real local model, fusion of both legs, chunks and filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast
from uuid import UUID

from fortemi.inference import InferenceBackend, LocalEmbeddingBackend
from fortemi.inference.backend import Embeddings
from fortemi.platform.database import Database
from fortemi.platform.notes import NotePatch, NoteService
from fortemi.retrieval.search import (
    FusionMode,
    Scope,
    SearchFilter,
    SearchMode,
    SearchRequest,
    SearchService,
)
from tests.integration.retrieval.conftest import Index, Search, Write


async def test_semantic_search_finds_meaning_that_shares_no_words(
    write: Write, index: Index, find: Search
) -> None:
    feline = await write("Afternoon", "The kitten curled up on the windowsill and purred.")
    taxes = await write("Deadlines", "Quarterly tax filings are due at the end of March.")
    for note in (feline, taxes):
        assert (await index(note)).kind == "success"
    semantic = await find("a sleepy cat", mode=SearchMode.SEMANTIC)
    assert semantic.hits[0].note_id == feline
    assert semantic.hits[0].semantic_score is not None
    assert semantic.hits[0].semantic_score > semantic.hits[1].semantic_score  # type: ignore[operator]
    assert not semantic.degraded
    lexical = await find("a sleepy cat", mode=SearchMode.LEXICAL)
    assert lexical.hits == []  # no shared words: only meaning finds it


async def test_hybrid_fuses_both_legs_with_rrf_and_rsf_and_explains_them(
    write: Write, index: Index, find: Search
) -> None:
    both = await write("Pod restarts", "A pod restarts when its container crashes repeatedly.")
    words = await write("Glossary", "pod: a group of containers. restarts: see policy.")
    meaning = await write("Crash loops", "Workloads that keep failing get rescheduled again.")
    for note in (both, words, meaning):
        await index(note)
    for fusion in (FusionMode.RRF, FusionMode.RSF):
        outcome = await find("why does my pod keep restarting", fusion=fusion)
        assert outcome.hits[0].note_id == both
        top = outcome.hits[0]
        assert top.lexical_rank is not None
        assert top.semantic_rank is not None
        assert outcome.fusion is not None
        assert [h.score for h in outcome.hits] == sorted(
            (h.score for h in outcome.hits), reverse=True
        )
    rsf = await find("why does my pod keep restarting", fusion=FusionMode.RSF)
    assert rsf.fusion is not None
    assert rsf.fusion.semantic_weight >= rsf.fusion.lexical_weight  # a natural-language query
    lexical_only = await find("why does my pod keep restarting", alpha=0.0, fusion=FusionMode.RSF)
    assert lexical_only.fusion is not None
    assert lexical_only.fusion.semantic_weight == 0.0


async def test_a_hit_carries_the_chunk_of_the_note_that_matched_best(
    write: Write, index: Index, find: Search
) -> None:
    sections = [
        "# Gardening\n\nTomatoes need full sun, deep watering and stakes to climb.",
        "# Astronomy\n\nJupiter's moons were first seen by Galileo through a telescope.",
        "# Baking\n\nSourdough bread rises slowly with a starter of wild yeast.",
    ]
    note = await write("Hobbies", "\n\n".join(s + " " + "More words here. " * 8 for s in sections))
    outcome = await index(note)
    assert outcome.result is not None
    assert outcome.result["chunks"] >= 3
    hit = (await find("planets and their moons", mode=SearchMode.SEMANTIC)).hits[0]
    assert hit.note_id == note
    assert hit.chunk is not None
    assert "Jupiter" in hit.chunk


async def test_a_lexical_hit_gets_its_best_chunk_only_when_chunks_are_asked_for(
    write: Write, index: Index, find: Search
) -> None:
    sections = [
        "# Gardening\n\nTomatoes need full sun, deep watering and stakes to climb.",
        "# Astronomy\n\nJupiter's moons were first seen by Galileo through a telescope.",
    ]
    note = await write("Hobbies", "\n\n".join(s + " " + "More words here. " * 8 for s in sections))
    await index(note)
    asked = await find("Galileo telescope", mode=SearchMode.LEXICAL)
    assert asked.hits[0].chunk is not None
    assert "Jupiter" in asked.hits[0].chunk
    skipped = await find("Galileo telescope", mode=SearchMode.LEXICAL, chunks=False)
    assert [h.note_id for h in skipped.hits] == [note]
    assert skipped.hits[0].chunk is None


async def test_semantic_filters_apply_before_ranking_even_past_what_the_index_returns(
    write: Write, index: Index, find: Search
) -> None:
    # 160 near-duplicates that the filter excludes outrank the one note it keeps: the index
    # returns only excluded chunks, so the search must read the filtered ones exactly.
    for i in range(160):
        note = await write(f"Cat {i}", f"A cat naps in the sun, story {i}.", tags=["noise"])
        await index(note)
    kept = await write("Dog", "A dog fetches a stick in the park.")
    await index(kept)
    outcome = await find(
        "a cat napping", mode=SearchMode.SEMANTIC, limit=1,
        filter=SearchFilter(excluded_tags=("noise",)),
    )  # fmt: skip
    assert [h.note_id for h in outcome.hits] == [kept]


async def test_reindexing_embeds_only_text_that_changed(
    write: Write, index: Index, notes: NoteService, memory: str, db: Database
) -> None:
    note = await write("Title", "First paragraph.\n\nSecond paragraph.")
    first = await index(note)
    assert first.result == {"chunks": 1, "embedded": 1}
    again = await index(note)
    assert again.result == {"chunks": 1, "embedded": 0}  # nothing changed: nothing redone
    await notes.update(memory, note, NotePatch(title="A new title"), actor="test")
    retitled = await index(note)
    assert retitled.result == {"chunks": 1, "embedded": 1}  # the title is in the text
    async with db.memory_transaction(memory) as conn:
        count = await conn.fetchval("SELECT count(*) FROM chunk_embedding WHERE note_id = $1", note)
    assert count == 1


async def test_hybrid_before_anything_is_embedded_is_lexical_and_degraded(
    write: Write, find: Search
) -> None:
    note = await write("Fresh", "brand new words")
    outcome = await find("brand new")
    assert [h.note_id for h in outcome.hits] == [note]
    assert outcome.degraded
    assert outcome.degraded_reason is not None
    assert "embedded" in outcome.degraded_reason


async def test_exclusions_and_required_phrases_filter_every_leg_before_ranking(
    write: Write, index: Index, find: Search
) -> None:
    phone = await write("Phones", "My mobile phone battery drains fast on the train.")
    tablet = await write("Tablets", "A mobile tablet app for reading on the train.")
    car = await write("Cars", "The car's battery died in the cold garage.")
    for note in (phone, tablet, car):
        await index(note)
    for mode in (SearchMode.HYBRID, SearchMode.SEMANTIC):
        excluded = await find("mobile -phone", mode=mode)
        assert phone not in {h.note_id for h in excluded.hits}
        assert tablet in {h.note_id for h in excluded.hits}
        required = await find('"battery died" mobile', mode=mode)
        assert [h.note_id for h in required.hits] == [car]
        nothing = await find('"xyzzy nonexistent"', mode=mode)
        assert nothing.hits == []
        assert not nothing.degraded  # the semantic leg ran, and its filter kept nothing


class _CountingBackend:
    """The real local model, counting the texts it is asked to embed."""

    def __init__(self, backend: LocalEmbeddingBackend) -> None:
        self.backend = backend
        self.embedded: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.backend, name)

    async def embed(self, texts: Sequence[str], *, model: str | None = None) -> Embeddings:
        self.embedded.extend(texts)
        return await self.backend.embed(texts, model=model)


async def test_a_repeated_query_is_embedded_once_and_ranks_the_same(
    db: Database, local_backend: LocalEmbeddingBackend, write: Write, index: Index, memory: str
) -> None:
    for title, text in [("Cats", "The kitten purred."), ("Taxes", "Filings are due in March.")]:
        assert (await index(await write(title, text))).kind == "success"
    counting = _CountingBackend(local_backend)
    service = SearchService(db, cast(InferenceBackend, counting), cached_queries=2)
    scope = [Scope(memory, None)]

    async def ask(query: str) -> list[UUID]:
        outcome = await service.search(scope, SearchRequest(query=query, mode=SearchMode.HYBRID))
        assert not outcome.degraded
        return [hit.note_id for hit in outcome.hits]

    first = await ask("a sleepy cat")
    assert await ask("a sleepy cat") == first
    assert len(counting.embedded) == 1
    await ask("tax deadline")
    await ask("spring filing")  # the cache holds two: the cat query is the oldest, and goes
    await ask("a sleepy cat")
    assert len(counting.embedded) == 4
