"""Selection (fusion, relevance, near-duplicates) and the prompt layout, on candidates
made by hand."""

from __future__ import annotations

from uuid import UUID, uuid5

import blake3

from fortemi.wiki.retrieve.layout import INSTRUCTIONS, ApproximateTokens, cache_order, lay_out
from fortemi.wiki.retrieve.models import Candidate, PlanSettings
from fortemi.wiki.retrieve.selector import select, shingles

NS = UUID("00000000-0000-0000-0000-000000000001")


def _chunk(
    chunk_id: int,
    text: str,
    *,
    semantic: float | None = 0.5,
    tfidf: float = 1.0,
    note: str = "a",
    ordinal: int = 0,
    project: str | None = "p",
    skill: str | None = None,
    share: float = 0.0,
) -> Candidate:
    return Candidate(
        chunk_id=chunk_id, note_id=uuid5(NS, note), title=note, path=f"{note}.md",
        project=project, skill=skill, ordinal=ordinal, heading=None, text=text, tfidf=tfidf,
        metadata=0.0, semantic=semantic, lexical_share=share,
    )  # fmt: skip


def test_relevance_admits_on_the_cosine_scale_and_near_the_best() -> None:
    settings = PlanSettings(min_relevance=0.3, relative_relevance=0.15)
    found = [
        _chunk(1, "alpha one", semantic=0.7),
        _chunk(2, "beta two", semantic=0.6),
        _chunk(3, "gamma three", semantic=0.5),  # passes the floor, too far below the best
        _chunk(4, "delta four", semantic=0.2),
    ]
    kept = select(found, settings)
    assert [c.chunk_id for c in kept] == [1, 2]
    assert {c.chunk_id: c.dropped for c in found} == {
        1: None, 2: None, 3: "below_relevance_threshold", 4: "below_relevance_threshold",
    }  # fmt: skip


def test_without_vectors_relevance_is_the_share_of_the_questions_weight() -> None:
    settings = PlanSettings(min_lexical_relevance=0.5)
    found = [_chunk(1, "x", semantic=None, share=0.8), _chunk(2, "y", semantic=None, share=0.3)]
    assert [c.chunk_id for c in select(found, settings)] == [1]


def test_fusion_weighs_the_semantic_leg_more_by_default() -> None:
    words = _chunk(1, "words", semantic=0.40, tfidf=9.0)
    meaning = _chunk(2, "meaning", semantic=0.45, tfidf=1.0)
    kept = select([words, meaning], PlanSettings())
    assert kept[0] is meaning  # each leads one ranking; the semantic leg weighs 0.6
    assert meaning.fused == 0.4 / 62 + 0.6 / 61


def test_a_near_duplicate_of_a_better_chunk_is_dropped() -> None:
    text = "the pod restarts because the container exits with code one after start"
    found = [
        _chunk(1, text, semantic=0.8),
        _chunk(2, text + " again", semantic=0.7),
        _chunk(3, "an unrelated sentence about lifetimes in rust code", semantic=0.7),
    ]
    kept = select(found, PlanSettings(duplicate_jaccard=0.7))
    assert [c.chunk_id for c in kept] == [1, 3]
    assert found[1].dropped == "near_duplicate"
    assert shingles("A b c d", 3) == frozenset({"a b c", "b c d"})


def test_only_the_top_chunks_are_kept() -> None:
    found = [_chunk(i, f"text number {i} " * (i + 1), semantic=0.9 - i / 1000) for i in range(15)]
    kept = select(found, PlanSettings(top_chunks=10, duplicate_jaccard=1.0))
    assert len(kept) == 10
    assert sum(c.dropped == "beyond_top" for c in found) == 5


def test_cache_order_groups_by_project_note_and_position_not_by_score() -> None:
    chunks = [
        _chunk(1, "s", note="skill", project=None, skill="SKILL-x"),
        _chunk(2, "shared", note="concept", project=None),
        _chunk(3, "b1", note="b", ordinal=1),
        _chunk(4, "a2", note="a", ordinal=2),
        _chunk(5, "other", note="o", project="q"),
        _chunk(6, "a0", note="a", ordinal=0),
    ]
    assert [c.chunk_id for c in cache_order(chunks, "p")] == [6, 4, 3, 5, 2, 1]


def test_the_layout_fits_the_budget_and_hashes_the_prefix() -> None:
    tokens = ApproximateTokens()
    ranked = [_chunk(i, "word " * 100, note=f"n{i}") for i in range(5)]
    layout = lay_out(ranked, "why?", "p", 400, tokens)
    assert layout is not None
    assert layout.tokens_used == tokens.count(layout.prompt) <= 400
    assert 0 < len(layout.chunks) < 5
    assert layout.prompt.startswith(INSTRUCTIONS)
    prefix = layout.prompt[: layout.prompt.rindex("Question: ")]
    assert layout.prefix_hash == blake3.blake3(prefix.encode()).hexdigest()
    again = lay_out(list(reversed(ranked)), "another question?", "p", 4096, tokens)
    assert again is not None
    same = lay_out(ranked, "another question?", "p", 4096, tokens)
    assert same is not None
    assert again.prefix_hash == same.prefix_hash  # the same chunks: the same prefix
    assert lay_out(ranked, "long " * 2000, "p", 400, tokens) is None


def test_approximate_tokens_never_count_fewer_than_words_and_marks() -> None:
    tokens = ApproximateTokens()
    assert tokens.count("a b c d e f g h") == 8
    assert tokens.count("x" * 40) == 10
