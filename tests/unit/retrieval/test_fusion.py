"""RRF and RSF: the formulas, the weights and how they adapt to the query type."""

from __future__ import annotations

import pytest

from fortemi.retrieval.fusion import DEFAULT_RRF_K, FusionPlan, Ranked, plan, rrf, rsf
from fortemi.retrieval.query import QueryType


def test_rrf_with_equal_weights_is_the_textbook_sum_of_reciprocal_ranks() -> None:
    lexical = Ranked(["a", "b", "c"], [9.0, 5.0, 1.0])
    semantic = Ranked(["c", "a"], [0.9, 0.8])
    fused = rrf(lexical, semantic, FusionPlan(k=60, lexical_weight=0.5, semantic_weight=0.5))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert max(fused, key=fused.__getitem__) == "a"


def test_rsf_normalises_each_leg_then_weighs_them() -> None:
    lexical = Ranked(["a", "b", "c"], [10.0, 6.0, 2.0])  # → 1, 0.5, 0
    semantic = Ranked(["b", "c"], [0.9, 0.7])  # → 1, 0
    fused = rsf(lexical, semantic, FusionPlan(k=60, lexical_weight=0.3, semantic_weight=0.7))
    assert fused == pytest.approx({"a": 0.3, "b": 0.3 * 0.5 + 0.7, "c": 0.0})


def test_rsf_gives_a_lone_or_tied_candidate_full_marks() -> None:
    fused = rsf(Ranked(["a"], [3.0]), Ranked([], []), FusionPlan(60, 0.5, 0.5))
    assert fused == {"a": 0.5}


def test_plans_default_adapt_and_obey_explicit_arguments() -> None:
    assert plan(QueryType.NATURAL, rsf=False, alpha=None, k=None, adaptive=False) == FusionPlan(
        DEFAULT_RRF_K, 0.5, 0.5
    )
    quoted = plan(QueryType.QUOTED, rsf=False, alpha=None, k=None, adaptive=True)
    long = plan(QueryType.CONCEPTUAL, rsf=False, alpha=None, k=None, adaptive=True)
    assert quoted.k < DEFAULT_RRF_K < long.k
    keyword = plan(QueryType.KEYWORD, rsf=True, alpha=None, k=None, adaptive=False)
    conceptual = plan(QueryType.CONCEPTUAL, rsf=True, alpha=None, k=None, adaptive=False)
    assert keyword.lexical_weight > keyword.semantic_weight
    assert conceptual.semantic_weight > conceptual.lexical_weight
    given = plan(QueryType.KEYWORD, rsf=True, alpha=0.9, k=7, adaptive=True)
    assert given == FusionPlan(7, pytest.approx(0.1), 0.9)  # type: ignore[arg-type]
