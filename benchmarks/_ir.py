"""BEIR-format test collections and the measures BEIR reports for them.

A BEIR folder (Thakur et al., "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of
Information Retrieval Models", NeurIPS 2021 Datasets and Benchmarks) holds
``corpus.jsonl`` (``{"_id", "title", "text", "metadata"?}`` per line), ``queries.jsonl``
(``{"_id", "text", ...}``) and ``qrels/<split>.tsv`` (a ``query-id  corpus-id  score``
header, then tab-separated judgements; the score is a graded relevance).

The measures are trec_eval's, as BEIR computes them through pytrec_eval:

* **nDCG@k** (Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
  TOIS 2002) = DCG@k / IDCG@k, where DCG@k = sum over ranks i = 1..k of g_i / log2(i + 1)
  and g_i is the grade of the document at rank i. The gain is the grade itself (linear),
  as in trec_eval's ``ndcg_cut``, not the 2^g - 1 of Burges et al.; unjudged documents
  and grades <= 0 give nothing. IDCG@k is the DCG@k of the judged documents sorted by
  grade, best first.
* **Recall@k** = (relevant documents in the top k) / (relevant documents), relevant meaning
  a grade > 0 (trec_eval's ``recall_k``).

Both are averaged over the queries with at least one relevant document. A query the run
has no list for counts as 0, as with ``trec_eval -c``. A ranking is taken in the order
given (trec_eval re-sorts by score, which only matters for ties). A document listed twice
counts at its first rank only: the repeat takes up a rank and gains nothing.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Dataset",
    "Document",
    "Qrels",
    "Quality",
    "evaluate",
    "load_beir",
    "ndcg_at",
    "recall_at",
    "rrf",
]

Qrels = Mapping[str, Mapping[str, int]]  # query id -> document id -> grade


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Dataset:
    """One split of a BEIR folder: the corpus, the split's judged queries, their qrels."""

    corpus: list[Document]
    queries: dict[str, str]  # only the queries judged in the split, in qrels order
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict) or "_id" not in row:
                    raise ValueError(f"{path}:{number}: not an object with an _id")
                yield row


def load_beir(folder: Path, split: str = "test") -> Dataset:
    """The corpus, queries and qrels of ``split``; raises ValueError on a malformed folder."""
    qrels: dict[str, dict[str, int]] = {}
    path = folder / "qrels" / f"{split}.tsv"
    with path.open(encoding="utf-8", newline="") as tsv:
        rows = csv.reader(tsv, delimiter="\t")
        header = next(rows, None)
        if header is None or [cell.strip() for cell in header[:2]] != ["query-id", "corpus-id"]:
            raise ValueError(f"{path}: expected a 'query-id  corpus-id  score' header")
        for number, row in enumerate(rows, 2):
            if not row:
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{number}: expected 3 tab-separated fields")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    texts = {str(row["_id"]): str(row.get("text", "")) for row in _jsonl(folder / "queries.jsonl")}
    missing = [query for query in qrels if query not in texts]
    if missing:
        raise ValueError(f"{len(missing)} judged queries are not in queries.jsonl: {missing[:5]}")
    corpus = [
        Document(str(row["_id"]), str(row.get("title") or ""), str(row.get("text") or ""))
        for row in _jsonl(folder / "corpus.jsonl")
    ]
    return Dataset(corpus, {query: texts[query] for query in qrels}, qrels)


def ndcg_at(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """nDCG@k of one ranking against one query's judgements (0 when none is relevant)."""
    ideal = _dcg(sorted((g for g in judged.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    gains = [max(judged.get(doc, 0), 0) if first else 0 for doc, first in _firsts(ranking[:k])]
    return _dcg(gains) / ideal


def recall_at(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k (0 when none is relevant)."""
    relevant = {doc for doc, grade in judged.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def _dcg(gains: Sequence[int]) -> float:
    return math.fsum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, 1))


def _firsts(ranking: Sequence[str]) -> Iterator[tuple[str, bool]]:
    """Each document with whether this is its first rank."""
    seen: set[str] = set()
    for doc in ranking:
        yield doc, doc not in seen
        seen.add(doc)


@dataclass(frozen=True, slots=True)
class Quality:
    ndcg: float  # mean nDCG@ndcg_k
    recall: float  # mean Recall@recall_k
    queries: int  # queries averaged over: those with a relevant document


def evaluate(
    run: Mapping[str, Sequence[str]], qrels: Qrels, *, ndcg_k: int = 10, recall_k: int = 100
) -> Quality:
    """Mean nDCG@ndcg_k and Recall@recall_k over the queries with a relevant document."""
    judged = [
        (query, grades) for query, grades in qrels.items() if any(g > 0 for g in grades.values())
    ]
    if not judged:
        raise ValueError("no query has a relevant document")
    ndcg = [ndcg_at(run.get(query, ()), grades, ndcg_k) for query, grades in judged]
    recall = [recall_at(run.get(query, ()), grades, recall_k) for query, grades in judged]
    return Quality(math.fsum(ndcg) / len(judged), math.fsum(recall) / len(judged), len(judged))


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> list[str]:
    """Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009).

    Each document scores sum 1 / (k + rank) over the rankings it is in (rank from 1, its
    first rank in each); best first, ties by document id.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (doc, first) in enumerate(_firsts(ranking), 1):
            if first:
                scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda doc: (-scores[doc], doc))
