"""Candidate keyphrases and their MMR selection, on text and vectors made here."""

from __future__ import annotations

import numpy as np

from fortemi.graph.tagging.keyphrases import candidates, mmr, plain_text
from fortemi.inference import normalized


def _phrases(title: str, content: str) -> list[str]:
    return [c.phrase for c in candidates(title, content)]


def test_phrases_are_runs_of_content_words_that_never_cross_stop_words_or_punctuation() -> None:
    found = _phrases("", "The vector database stores embeddings, and the graph prunes edges.")
    assert "vector database" in found
    assert "vector database stores" in found
    assert "database stores embeddings" in found
    assert "embeddings graph" not in found  # a comma and a stop word lie between
    assert not any(word in found for word in ("the", "and"))


def test_phrases_have_at_most_three_words() -> None:
    found = _phrases("", "shared nearest neighbour graph pruning")
    assert "shared nearest neighbour" in found
    assert max(len(phrase.split()) for phrase in found) == 3


def test_title_phrases_count_double_and_rank_first() -> None:
    found = candidates("Louvain communities", "We detect communities. Then we label them.")
    counts = {c.phrase: c.count for c in found}
    assert counts["communities"] == 3  # twice for the title, once in the text
    assert found[0].phrase == "communities"


def test_capitals_are_kept_for_names_and_dropped_at_sentence_starts() -> None:
    found = _phrases(
        "Graph Pruning", "Pruning uses SNN scores. The graph is stored in PostgreSQL today."
    )
    assert "graph pruning" in found
    assert "SNN scores" in found
    assert "PostgreSQL" in found
    assert "Pruning" not in found


def test_code_urls_and_link_targets_are_not_read_but_link_texts_are() -> None:
    text = (
        "See [the manual](https://example.org/manual) and [[Graph maintenance|maintenance]].\n"
        "```python\nimport networkx\n```\nAlso `inline_code` and https://example.org/x."
    )
    plain = plain_text(text)
    assert "networkx" not in plain
    assert "inline_code" not in plain
    assert "example.org" not in plain
    assert "manual" in plain
    assert "maintenance" in plain
    assert "Graph" not in plain


def test_adverbs_short_words_and_long_tokens_are_not_candidates() -> None:
    found = _phrases("", f"typically ml {'x' * 60} family AI")
    assert sorted(found) == ["AI", "family", "family AI"]


def test_the_same_text_gives_the_same_candidates() -> None:
    text = "Hybrid search fuses lexical and dense retrieval with reciprocal rank fusion."
    assert candidates("Search", text) == candidates("Search", text)


def _unit(*rows: list[float]) -> np.ndarray:
    return normalized(np.array(rows, dtype=np.float32))


def test_mmr_picks_the_most_relevant_first_then_trades_relevance_for_diversity() -> None:
    note = _unit([1.0, 0.0, 0.0])[0]
    phrases = ["a", "a twin", "b"]
    vectors = _unit([0.9, 0.1, 0.0], [0.9, 0.12, 0.0], [0.6, 0.0, 0.8])
    by_relevance = [r.phrase for r in mmr(phrases, vectors, note, top=2, diversity=0.0)]
    diverse = [r.phrase for r in mmr(phrases, vectors, note, top=2, diversity=0.5)]
    assert by_relevance == ["a", "a twin"]
    assert diverse == ["a", "b"]


def test_mmr_never_picks_a_phrase_below_the_floor_and_reports_its_cosine() -> None:
    note = _unit([1.0, 0.0])[0]
    vectors = _unit([1.0, 0.0], [0.0, 1.0])
    picked = mmr(["close", "far"], vectors, note, top=5, floor=0.2)
    assert [(r.phrase, round(r.similarity, 6)) for r in picked] == [("close", 1.0)]


def test_mmr_keeps_the_input_order_on_equal_scores() -> None:
    note = _unit([1.0, 0.0])[0]
    vectors = _unit([1.0, 0.0], [1.0, 0.0])
    assert [r.phrase for r in mmr(["first", "second"], vectors, note, top=1)] == ["first"]
