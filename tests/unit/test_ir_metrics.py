"""The retrieval measures of benchmarks/_ir.py against cases worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks._ir import Document, evaluate, load_beir, ndcg_at, recall_at, rrf

# d1 unjudged, d2 grade 1, d3 grade 2, d4 grade 1 (never retrieved), d5 judged not relevant.
JUDGED = {"d2": 1, "d3": 2, "d4": 1, "d5": 0}
RANKING = ["d1", "d2", "d3", "d5"]


def test_ndcg_uses_linear_gain_log2_discount_and_the_ideal_from_the_qrels() -> None:
    # DCG@3 = 0/log2(2) + 1/log2(3) + 2/log2(4); IDCG@3 = 2/log2(2) + 1/log2(3) + 1/log2(4)
    expected = (1 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3) + 1 / 2)
    assert ndcg_at(RANKING, JUDGED, 3) == pytest.approx(expected, abs=1e-12)
    assert ndcg_at(RANKING, JUDGED, 3) == pytest.approx(0.520909, abs=1e-6)


def test_ndcg_is_one_for_the_ideal_ranking_and_zero_past_the_cut() -> None:
    assert ndcg_at(["d3", "d2", "d4"], JUDGED, 10) == pytest.approx(1.0)
    assert ndcg_at([f"x{i}" for i in range(10)] + ["d3"], JUDGED, 10) == 0.0


def test_recall_counts_relevant_documents_in_the_top_k() -> None:
    assert recall_at(RANKING, JUDGED, 2) == pytest.approx(1 / 3)
    assert recall_at(RANKING, JUDGED, 100) == pytest.approx(2 / 3)


def test_a_repeated_document_takes_a_rank_and_gains_nothing() -> None:
    # DCG@3 = 1/log2(2) + 0 + 2/log2(4)
    expected = (1 + 2 / 2) / (2 + 1 / math.log2(3) + 1 / 2)
    assert ndcg_at(["d2", "d2", "d3"], JUDGED, 3) == pytest.approx(expected, abs=1e-12)
    assert recall_at(["d2", "d2", "d3"], JUDGED, 2) == pytest.approx(1 / 3)


def test_evaluate_averages_over_judged_queries_and_counts_missing_runs_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    quality = evaluate({"q1": ["a"], "q3": ["c"]}, qrels, ndcg_k=10, recall_k=100)
    assert quality.queries == 2  # q3 has no relevant document
    assert quality.ndcg == pytest.approx(0.5)  # q1 perfect, q2 missing
    assert quality.recall == pytest.approx(0.5)


def test_rrf_sums_reciprocal_ranks() -> None:
    # a: 1/61 + 1/63, b: 1/62 + 1/61, c: 1/63 + 1/62, d: 1/64
    assert rrf([["a", "b", "c"], ["b", "c", "a", "d"]], k=60) == ["b", "a", "c", "d"]


def test_load_beir_reads_the_split_and_only_its_judged_queries(tmp_path: Path) -> None:
    corpus = [{"_id": "1", "title": "T", "text": "x"}, {"_id": "2", "text": "y"}]
    queries = [{"_id": "q1", "text": "what"}, {"_id": "q2", "text": "other"}]
    (tmp_path / "corpus.jsonl").write_text("\n".join(map(json.dumps, corpus)) + "\n")
    (tmp_path / "queries.jsonl").write_text("\n".join(map(json.dumps, queries)) + "\n")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq2\t2\t1\n")
    data = load_beir(tmp_path, "dev")
    assert data.corpus == [Document("1", "T", "x"), Document("2", "", "y")]
    assert data.queries == {"q2": "other"}
    assert data.qrels == {"q2": {"2": 1}}
