"""Path tags (a/b/c) read from note tags."""

from __future__ import annotations

from fortemi.graph.vocabulary.indexer import tag_proposals
from fortemi.graph.vocabulary.service import path_of


def test_a_path_tag_is_its_trimmed_non_empty_components() -> None:
    assert path_of(" ml / nlp //transformers/ ") == ("ml", "nlp", "transformers")
    assert path_of("/") == ()


def test_only_tags_with_a_slash_become_proposals_once_each_case_insensitively() -> None:
    proposals = tag_proposals(["todo", "ml/NLP", "ML/nlp", "/", "a/" + "x" * 201, "lang/py"])
    assert [p.path for p in proposals] == [("ml", "NLP"), ("lang", "py")]
    assert {(p.dimension, p.confidence, p.relevance, p.primary) for p in proposals} == {
        (None, 1.0, 1.0, False)
    }
