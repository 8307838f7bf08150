"""Query syntax: optional words, required phrases, exclusions, prefixes; query types."""

from __future__ import annotations

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.retrieval.query import QueryType, parse_query


def test_phrases_exclusions_and_prefixes_are_told_apart() -> None:
    parsed = parse_query('pod "crash loop" -mesh -"service mesh" OR netw* k8s')
    assert parsed.phrases == ("crash loop",)
    assert parsed.excluded == ("mesh", "service mesh")
    assert parsed.prefixes == ("netw",)
    assert parsed.text == "pod k8s crash loop"
    assert parsed.type is QueryType.QUOTED


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("kubernetes", QueryType.KEYWORD),
        ("pod restart policy", QueryType.KEYWORD),
        ("how do pods restart", QueryType.NATURAL),
        ("pods keep restarting after deploy", QueryType.NATURAL),
        ("restart?", QueryType.NATURAL),
        (" ".join(["idea"] * 12), QueryType.CONCEPTUAL),
        ('"exact words"', QueryType.QUOTED),
    ],
)
def test_query_types(query: str, kind: QueryType) -> None:
    assert parse_query(query).type is kind


def test_a_one_letter_prefix_is_a_word_not_a_prefix() -> None:
    parsed = parse_query("a* b")
    assert parsed.prefixes == ()
    assert parsed.text == "a* b"  # the analyzer drops the star: a plain word


@pytest.mark.parametrize(
    "query", ["", "  ", "-x", '-"a b"', "OR", '""', " ".join(f"w{i}" for i in range(1025))]
)
def test_queries_without_anything_to_find_are_bad_input(query: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        parse_query(query)
    assert raised.value.extensions["field"] == "query"


def test_a_long_query_is_bounded_by_distinct_words_not_characters() -> None:
    parsed = parse_query(" ".join(["retrieval of documents"] * 2000))  # 44,000 characters
    assert parsed.text.startswith("retrieval of documents retrieval")
    parse_query(" ".join(f"w{i}" for i in range(1024)))  # exactly the bound


def test_a_quotation_in_a_sentence_is_boosted_not_required() -> None:
    sentence = parse_query('during the "training" phase words from classified documents are chosen')
    assert sentence.phrases == ()
    assert sentence.boosted == ("training",)
    assert sentence.type is QueryType.NATURAL
    assert sentence.lexical_text.count("training") == 2  # the quoted word counts once more
    assert "training" in sentence.text
    # Short queries and queries using other operators keep the quoted span required.
    assert parse_query('"crash loop" pod restarts').phrases == ("crash loop",)
    with_operator = parse_query('during the "training" phase words from classified docs -draft')
    assert with_operator.phrases == ("training",)
    assert with_operator.boosted == ()
