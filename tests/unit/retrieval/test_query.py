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


@pytest.mark.parametrize("query", ["", "  ", "-x", '-"a b"', "OR", '""', "x" * 1001])
def test_queries_without_anything_to_find_are_bad_input(query: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        parse_query(query)
    assert raised.value.extensions["field"] == "query"
