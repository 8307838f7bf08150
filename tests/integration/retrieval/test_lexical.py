"""The lexical leg is Okapi BM25 over PostgreSQL's English analysis, exactly."""

from __future__ import annotations

import math
from typing import Any
from uuid import UUID

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import NotePatch, NoteService
from fortemi.retrieval.search import BM25_B, BM25_K1, SearchFilter, SearchMode
from tests.integration.retrieval.conftest import Search, Write


async def _lexemes(db: Database, memory: str) -> dict[UUID, dict[str, int]]:
    """Each live note's terms and frequencies as PostgreSQL's analyzer sees them."""
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT n.id, t.lexeme, array_length(t.positions, 1) AS tf "
            "FROM note n, unnest(n.lex) AS t WHERE n.deleted_at IS NULL"
        )
    docs: dict[UUID, dict[str, int]] = {}
    for row in rows:
        docs.setdefault(row["id"], {})[row["lexeme"]] = row["tf"]
    return docs


def _bm25(docs: dict[UUID, dict[str, int]], terms: list[str]) -> dict[UUID, float]:
    """The textbook formula (Robertson & Zaragoza 2009, Lucene's IDF), independently."""
    n = len(docs)
    lengths = {d: sum(tf.values()) for d, tf in docs.items()}
    avgdl = sum(lengths.values()) / n
    scores: dict[UUID, float] = {}
    for term in terms:
        df = sum(term in tf for tf in docs.values())
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for d, tf in docs.items():
            f = tf.get(term, 0)
            if f:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[d] / avgdl)
                scores[d] = scores.get(d, 0.0) + idf * f * (BM25_K1 + 1) / (f + norm)
    return scores


CORPUS = [
    ("Kubernetes pods", "A pod that keeps crashing is stuck in CrashLoopBackOff."),
    ("Debugging pods", "Read the pod logs, then describe the pod, then check its events."),
    ("Cooking", "Slow-cooked beans need salt, time and patience; pods of peas too."),
    ("Networking", "Services route traffic to pods through labels and selectors."),
    ("Long essay", " ".join(["The cluster scheduler places workloads on nodes."] * 30)),
]


async def test_scores_are_exactly_okapi_bm25_over_the_english_analyzer(
    write: Write, search: Search, db: Database, memory: str
) -> None:
    for title, content in CORPUS:
        await write(title, content)
    outcome = await search("crashing pods logs", limit=10)
    expected = _bm25(await _lexemes(db, memory), ["crash", "pod", "log"])
    got = {hit.note_id: hit.score for hit in outcome.hits}
    assert set(got) == set(expected)
    for note_id, score in expected.items():
        assert got[note_id] == pytest.approx(score, rel=1e-9)
    assert [h.score for h in outcome.hits] == sorted(got.values(), reverse=True)
    assert not outcome.degraded  # a lexical search asked for is not degraded


async def test_term_frequency_saturates_and_long_notes_are_normalised(
    write: Write, search: Search
) -> None:
    short_once = await write("", "zebra grazing")
    short_thrice = await write("", "zebra zebra zebra grazing")
    long_once = await write("", "zebra " + " ".join(f"filler{i}" for i in range(200)))
    for i in range(5):
        await write("", f"unrelated note number {i}")
    scores = {h.note_id: h.score for h in (await search("zebra")).hits}
    assert scores[short_thrice] > scores[short_once] > scores[long_once]
    # Saturation: three occurrences score well under three times one.
    assert scores[short_thrice] < 2 * scores[short_once]


async def test_rare_terms_outweigh_common_ones(write: Write, search: Search) -> None:
    for i in range(8):
        await write("", f"common words appear in note {i}")
    rare = await write("", "an okapi appears once")
    common = await write("", "common words twice: common")
    hits = (await search("common okapi")).hits
    assert hits[0].note_id == rare
    assert common in {h.note_id for h in hits}


async def test_phrases_are_required_exclusions_removed_prefixes_expanded(
    write: Write, search: Search
) -> None:
    ordered = await write("", "the pod is stuck in a crash loop")
    scrambled = await write("", "loop crash: a pod is stuck")
    other = await write("", "networking notes about a service mesh")
    found = {h.note_id for h in (await search('"crash loop"')).hits}
    assert found == {ordered}
    found = {h.note_id for h in (await search("pod -mesh OR service")).hits}
    assert found == {ordered, scrambled}
    found = {h.note_id for h in (await search("network*")).hits}
    assert found == {other}
    found = {h.note_id for h in (await search('pod -"crash loop"')).hits}
    assert found == {scrambled}


async def test_filters_apply_before_ranking_so_the_top_k_is_never_starved(
    write: Write, search: Search
) -> None:
    # Sixty notes that match better but are excluded by tag, one weaker match that is not.
    for i in range(60):
        await write("", f"kubernetes kubernetes kubernetes item {i}", tags=["noise"])
    kept = await write("", "kubernetes " + " ".join(f"word{i}" for i in range(40)))
    outcome = await search("kubernetes", limit=1, filter=SearchFilter(excluded_tags=("noise",)))
    assert [h.note_id for h in outcome.hits] == [kept]


async def test_a_filter_rejecting_every_best_candidate_still_finds_the_weaker_match(
    write: Write, search: Search
) -> None:
    # The leg ranks the best 4 x 50 notes from the postings before checking the filter;
    # when the filter rejects all of them, it must rank the filtered notes instead.
    for i in range(4 * 50 + 10):
        await write("", f"kubernetes kubernetes kubernetes item {i}", tags=["noise"])
    kept = await write("", "kubernetes " + " ".join(f"word{i}" for i in range(40)))
    outcome = await search("kubernetes", limit=1, filter=SearchFilter(excluded_tags=("noise",)))
    assert [h.note_id for h in outcome.hits] == [kept]
    assert outcome.hits[0].lexical_rank == 1


async def test_tag_and_project_filters_and_an_unsatisfiable_one_returns_nothing(
    write: Write, search: Search
) -> None:
    both = await write("", "alpha beta", tags=["a", "b"], project="p1")
    only_a = await write("", "alpha gamma", tags=["a"], project="p2")
    await write("", "alpha delta", tags=["c"])
    assert {h.note_id for h in (await search("alpha", filter=SearchFilter(
        required_tags=("a", "b")))).hits} == {both}  # fmt: skip
    assert {h.note_id for h in (await search("alpha", filter=SearchFilter(
        any_tags=("a",)))).hits} == {both, only_a}  # fmt: skip
    assert {h.note_id for h in (await search("alpha", filter=SearchFilter(
        projects=("p2",)))).hits} == {only_a}  # fmt: skip
    impossible = SearchFilter(required_tags=("a",), excluded_tags=("a",))
    assert (await search("alpha", filter=impossible)).hits == []
    assert (await search("alpha", filter=SearchFilter(projects=()))).hits == []


async def test_deleted_notes_leave_the_index_and_restored_ones_return(
    write: Write, search: Search, notes: NoteService, memory: str
) -> None:
    gone = await write("", "ephemeral thought")
    await notes.delete(memory, gone, actor="test")
    assert (await search("ephemeral")).hits == []
    await notes.restore(memory, gone, actor="test")
    assert [h.note_id for h in (await search("ephemeral")).hits] == [gone]
    await notes.update(memory, gone, NotePatch(content="permanent idea"), actor="test")
    assert (await search("ephemeral")).hits == []
    assert [h.note_id for h in (await search("permanent")).hits] == [gone]


async def test_starred_archived_and_date_filters_apply_before_ranking(
    write: Write, search: Search, db: Database
) -> None:
    older = await write("", "aurora aurora aurora", starred=True)
    boundary = await db.fetchval("SELECT clock_timestamp()")
    newer = await write("", "aurora", archived=True)

    async def found(**given: Any) -> set[UUID]:
        return {h.note_id for h in (await search("aurora", filter=SearchFilter(**given))).hits}

    assert await found(starred=True) == {older}
    assert await found(starred=False) == {newer}
    assert await found(archived=True) == {newer}
    assert await found(archived=False) == {older}
    assert await found(created_after=boundary) == {newer}
    assert await found(created_before=boundary) == {older}
    assert await found(created_after=boundary, starred=True) == set()


async def _index_rows(db: Database, memory: str) -> tuple[set[tuple[str, UUID, int, int]], int]:
    async with db.memory_transaction(memory) as conn:
        postings = await conn.fetch("SELECT lexeme, note_id, tf, dl FROM lex_posting")
        docs = await conn.fetchval("SELECT count(*) FROM lex_doc")
    return {(r["lexeme"], r["note_id"], r["tf"], r["dl"]) for r in postings}, docs


async def test_the_index_holds_exactly_the_live_notes_terms_through_every_change(
    write: Write, notes: NoteService, db: Database, memory: str
) -> None:
    kept = await write("Kept", "alpha beta beta")
    changed = await write("Changed", "gamma delta")
    deleted = await write("Deleted", "epsilon")
    purged = await write("Purged", "zeta eta")
    removed_live = await write("Removed", "iota kappa")
    await notes.update(memory, changed, NotePatch(content="delta theta theta"), actor="test")
    await notes.delete(memory, deleted, actor="test")
    await notes.delete(memory, purged, actor="test")
    await notes.purge(memory, purged)
    async with db.memory_transaction(memory) as conn:  # a live note deleted outright
        await conn.execute("DELETE FROM note WHERE id = $1", removed_live)
    await notes.delete(memory, kept, actor="test")
    await notes.restore(memory, kept, actor="test")

    expected: set[tuple[str, UUID, int, int]] = set()
    for note_id, terms in (await _lexemes(db, memory)).items():
        length = sum(terms.values())
        expected |= {(lexeme, note_id, tf, length) for lexeme, tf in terms.items()}
    postings, docs = await _index_rows(db, memory)
    assert postings == expected
    assert {note for _, note, _, _ in postings} == {kept, changed}
    assert docs == 2


async def test_a_prefix_expands_to_indexed_words_in_order_up_to_a_bound(
    write: Write, search: Search
) -> None:
    words = [f"zq{i:02d}word" for i in range(30)]
    ids = [await write("", word) for word in words]
    await write("", "zqa unrelated")  # sorts after every zqNN word: beyond the bound
    found = {h.note_id for h in (await search("zq*", limit=100)).hits}
    assert found == set(ids[:20])  # the first 20 words in byte order


@pytest.mark.parametrize("query", ["", "   ", "-only -exclusions"])
async def test_queries_with_nothing_to_look_for_are_refused(search: Search, query: str) -> None:
    with pytest.raises(BadUserInput):
        await search(query)


async def test_semantic_mode_without_a_model_says_why_it_is_degraded(
    write: Write, search: Search
) -> None:
    await write("", "anything at all")
    outcome = await search("anything", mode=SearchMode.SEMANTIC)
    assert outcome.hits == []
    assert outcome.degraded
    assert outcome.degraded_reason == "no embedding model is configured"
    hybrid = await search("anything", mode=SearchMode.HYBRID)
    assert hybrid.degraded
    assert len(hybrid.hits) == 1  # the lexical leg still answers


async def test_a_word_the_query_repeats_counts_once_per_occurrence(
    write: Write, search: Search, db: Database, memory: str
) -> None:
    repeated = await write("", "ranking of retrieval results")
    once = await write("", "ranking of library catalogues")
    for i in range(4):
        await write("", f"unrelated filler note {i}")
    outcome = await search("retrieval ranking library retrieval")
    scores = {hit.note_id: hit.score for hit in outcome.hits}
    # Both notes hold one query word each of the same rarity and have the same length:
    # only the query saying "retrieval" twice sets them apart, as it does in Lucene.
    assert scores[repeated] > scores[once]
    expected = _bm25(await _lexemes(db, memory), ["retriev", "rank", "librari", "retriev"])
    for note_id, score in expected.items():
        assert scores[note_id] == pytest.approx(score, rel=1e-9)


async def test_a_pasted_paragraph_is_searched_not_refused(write: Write, search: Search) -> None:
    target = await write("", "Citation indexing links papers through their references.")
    await write("", "Gardening in the spring needs patience.")
    paragraph = " ".join(
        f"Sentence {i} of a long abstract about how citation indexing helps find papers."
        for i in range(60)
    )
    assert len(paragraph) > 4000
    hits = (await search(paragraph)).hits
    assert hits[0].note_id == target


async def test_a_query_with_too_many_distinct_words_is_refused_with_the_bound(
    search: Search,
) -> None:
    with pytest.raises(BadUserInput) as raised:
        await search(" ".join(f"w{i}" for i in range(1025)))
    assert "1,024 distinct words" in raised.value.message
    assert raised.value.extensions["field"] == "query"


async def test_a_quoted_word_in_a_question_ranks_higher_but_is_not_required(
    write: Write, search: Search
) -> None:
    quoted = await write("", "The virtual library lends electronic books to its readers.")
    plain = await write("", "The public library lends printed books to its readers.")
    unrelated = await write("", "Bicycles need their chains oiled every month.")
    question = 'how does a "virtual" library lend books to readers who never visit it'
    hits = (await search(question)).hits
    assert [h.note_id for h in hits][:2] == [quoted, plain]
    assert unrelated not in {h.note_id for h in hits}
    technical = 'which systems index the "zettelkasten method" for readers of library books'
    assert {h.note_id for h in (await search(technical)).hits} == {quoted, plain}
    # A short query keeps the documented syntax: the quoted span is required.
    assert (await search('"virtual" library')).hits[0].note_id == quoted
    assert len((await search('"virtual" library')).hits) == 1
