"""Quality of automatic links on SciFact: are linked abstracts related?

``python -m benchmarks.link_quality --dataset DIR [--split test] [--cache DIR] [--k 5]
[--min-score 0.7] [--seed 0]``

Ground truth. SciFact (Wadden et al., "Fact or Fiction: Verifying Scientific Claims",
EMNLP 2020) pairs claims with the abstracts that support or refute them. Two abstracts
cited by the same claim of the split are *related*. A link is *judged* when both its ends
are cited by some claim of the split; precision is the share of judged links that join
related abstracts. Every abstract of the corpus takes part in linking (as in a real
memory); only judged links are counted. Tune on ``--split train``, report on ``test``.

Vectors are the product's: each abstract is chunked (``fortemi.retrieval.chunking`` with
the default chunk size), each chunk composed as the Embedding job composes it (title,
chunk), embedded by the local CPU model, and a note's vector is the normalised mean of its
chunk vectors, which is what the Linking job compares. They are cached in ``--cache``
(keyed by the model and the corpus), so a second run embeds nothing.

Rows, all on the same vectors:

* **random pairs**: the expected precision of a link drawn uniformly among judged pairs
  (related judged pairs / judged pairs), computed exactly.
* **top-k nearest neighbours**: each note linked to its k nearest notes (exact cosine),
  the plain baseline the issue measures against (k = 5).
* **automatic links**: the Linking job's selection (threshold, concept-free scoring,
  HNSW's diverse-neighbour heuristic, adaptive k, fallback), then after SNN pruning and
  after PFNET pruning, each through the product's own functions in
  ``fortemi.graph.linking`` and ``fortemi.graph.maintenance``.

Each row prints the judged links, precision, links per note and the share of notes with
at least one link.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import numpy as np
import numpy.typing as npt

from benchmarks._common import table
from benchmarks._ir import Dataset, Document, load_beir

Vectors = npt.NDArray[np.float32]
Pair = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Truth:
    """Who is judged and which judged pairs are related, by index into the corpus."""

    cited: frozenset[int]
    related: frozenset[Pair]  # (i, j) with i < j

    @classmethod
    def of(cls, dataset: Dataset, index: Mapping[str, int]) -> Truth:
        cited: set[int] = set()
        related: set[Pair] = set()
        for judged in dataset.qrels.values():
            docs = sorted(index[doc] for doc, grade in judged.items() if grade > 0 and doc in index)
            cited.update(docs)
            related.update(itertools.combinations(docs, 2))
        return cls(frozenset(cited), frozenset(related))

    def judged_pairs(self) -> int:
        return len(self.cited) * (len(self.cited) - 1) // 2

    def random_precision(self) -> float:
        pairs = self.judged_pairs()
        return len(self.related) / pairs if pairs else 0.0


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    judged: int
    precision: float
    links_per_note: float
    linked_share: float

    def interval(self) -> str:
        """The precision's 95 % Wilson score interval: judged links are few (tens to
        hundreds), so the interval says how far two rows really differ."""
        if not self.judged:
            return "-"
        z, n, p = 1.96, self.judged, self.precision
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return f"{max(0.0, centre - half):.2f}-{min(1.0, centre + half):.2f}"


def measure(name: str, links: Iterable[Pair], truth: Truth, notes: int) -> Row:
    """Precision of ``links`` (undirected, deduplicated) over the judged ones."""
    undirected = {(min(a, b), max(a, b)) for a, b in links if a != b}
    judged = [pair for pair in undirected if pair[0] in truth.cited and pair[1] in truth.cited]
    hits = sum(1 for pair in judged if pair in truth.related)
    linked = {end for pair in undirected for end in pair}
    return Row(
        name=name,
        judged=len(judged),
        precision=hits / len(judged) if judged else 0.0,
        links_per_note=len(undirected) / notes if notes else 0.0,
        linked_share=len(linked) / notes if notes else 0.0,
    )


# -- vectors ------------------------------------------------------------------------------


def _corpus_key(corpus: Sequence[Document], model: str) -> str:
    digest = hashlib.blake2b(model.encode(), digest_size=16)
    for doc in corpus:
        digest.update(f"{doc.id}\x00{doc.title}\x00{doc.text}\x01".encode())
    return digest.hexdigest()


def note_vectors(corpus: Sequence[Document], cache: Path) -> Vectors:
    """One unit vector per document, as the Linking job sees notes (see the module doc)."""
    from fortemi.inference.local import LocalEmbeddingBackend
    from fortemi.retrieval.chunking import chunk_text
    from fortemi.retrieval.sets import composition_for

    backend = LocalEmbeddingBackend()
    model = backend._describe().model  # the name and dimension, without loading the weights
    path = cache / f"link-quality-{_corpus_key(corpus, model.name)}.npy"
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    composition = composition_for(model.name)
    texts: list[str] = []
    owners: list[int] = []
    for i, doc in enumerate(corpus):
        # A note without content is still embedded, by its title (as the job does).
        pieces = [c.text for c in chunk_text(doc.text, format="markdown", size=1000, overlap=100)]
        for piece in pieces or [""]:
            texts.append(composition.document(doc.title, piece, ()))
            owners.append(i)
    started = time.perf_counter()
    embedded = backend.embed_blocking(texts)
    print(
        f"embedded {len(texts)} chunks of {len(corpus)} abstracts in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    sums = np.zeros((len(corpus), embedded.shape[1]), dtype=np.float64)
    np.add.at(sums, np.asarray(owners), embedded.astype(np.float64))
    vectors: Vectors = (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def top_k(vectors: Vectors, k: int) -> npt.NDArray[np.intp]:
    """Each row's k nearest other rows by cosine, best first (exact)."""
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    part = np.argpartition(-sims, k, axis=1)[:, :k]
    order = np.take_along_axis(sims, part, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(part, order, axis=1)


def knn_links(neighbours: npt.NDArray[np.intp]) -> list[Pair]:
    return [(i, int(j)) for i, row in enumerate(neighbours) for j in row]


@dataclass(frozen=True, slots=True)
class Automatic:
    """The automatic links of every note and what SNN and PFNET leave of them."""

    linked: list[Pair]
    after_snn: list[Pair]
    after_pfnet: list[Pair]
    fallbacks: int
    k: int
    snn: dict[str, object]
    pfnet: dict[str, object]


def automatic_links(vectors: Vectors, *, min_score: float) -> Automatic:
    """The Linking job's selection for every note, then the maintenance plan's SNN and
    PFNET steps, through the product's own functions. Candidates are each note's exact
    nearest notes, as many as the job reads from the HNSW index (k per link wanted times
    ``candidates_per_link``); there are no concepts, so the score is the similarity."""
    from fortemi.graph.linking.selection import Candidate, adaptive_k, select_links
    from fortemi.graph.linking.service import LinkingSettings
    from fortemi.graph.maintenance.plan import (
        GraphState,
        MaintenanceSettings,
        Step,
        plan_maintenance,
    )

    notes = len(vectors)
    ids = [UUID(int=i) for i in range(notes)]
    k = adaptive_k(notes)
    fetch = k * LinkingSettings().candidates_per_link
    neighbours = top_k(vectors, fetch)
    scores: dict[tuple[UUID, UUID], float] = {}
    fallbacks = 0
    for i, row in enumerate(neighbours):
        candidates = [Candidate(ids[j], vectors[j]) for j in row]
        chosen = select_links(vectors[i], candidates, k=k, min_score=min_score)
        fallbacks += sum(1 for link in chosen if link.fallback)
        for link in chosen:
            key = (min(ids[i], link.note_id), max(ids[i], link.note_id))
            # Reciprocal rows carry one score; the pair is one edge of the graph.
            scores[key] = max(scores.get(key, 0.0), link.score)
    state = GraphState(
        notes=ids, vectors={ids[i]: vectors[i] for i in range(notes)}, semantic=scores
    )
    plan = plan_maintenance(
        state, (Step.SNN, Step.PFNET), MaintenanceSettings(), allow_aggressive_pruning=True
    )
    kept = [pair for pair in scores if pair not in plan.deleted]
    unpruned = [pair for pair in kept if pair not in (plan.pruned or frozenset())]

    def indices(pairs: Iterable[tuple[UUID, UUID]]) -> list[Pair]:
        return [(a.int, b.int) for a, b in pairs]

    return Automatic(
        linked=indices(scores),
        after_snn=indices(kept),
        after_pfnet=indices(unpruned),
        fallbacks=fallbacks,
        k=k,
        snn=dict(plan.metrics.get("snn", {})),
        pfnet=dict(plan.metrics.get("pfnet", {})),
    )


# -- main ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, type=Path, help="a BEIR folder (SciFact)")
    parser.add_argument("--split", default="test", help="the claims that define relatedness")
    parser.add_argument("--cache", type=Path, default=Path(".cache/benchmarks"))
    parser.add_argument("--k", type=int, default=5, help="the plain nearest-neighbour baseline")
    parser.add_argument("--min-score", type=float, default=0.7, help="the linking threshold")
    args = parser.parse_args(argv)

    dataset = load_beir(args.dataset, args.split)
    index = {doc.id: i for i, doc in enumerate(dataset.corpus)}
    truth = Truth.of(dataset, index)
    vectors = note_vectors(dataset.corpus, args.cache)
    notes = len(dataset.corpus)
    rows = [
        Row("random judged pairs", truth.judged_pairs(), truth.random_precision(), 0.0, 0.0),
        measure(
            f"top-{args.k} nearest neighbours", knn_links(top_k(vectors, args.k)), truth, notes
        ),
    ]
    started = time.perf_counter()
    auto = automatic_links(vectors, min_score=args.min_score)
    took = time.perf_counter() - started
    rows += [
        measure("automatic links", auto.linked, truth, notes),
        measure("  after SNN", auto.after_snn, truth, notes),
        measure("  after SNN + PFNET", auto.after_pfnet, truth, notes),
    ]
    print(
        f"SciFact {args.split}: {notes} abstracts, {len(truth.cited)} cited, "
        f"{len(truth.related)} related pairs"
    )
    print(
        table(
            ("links", "judged", "precision", "95% interval", "links/note", "notes linked"),
            [
                (
                    r.name,
                    str(r.judged),
                    f"{r.precision:.3f}",
                    r.interval(),
                    f"{r.links_per_note:.2f}",
                    f"{r.linked_share:.1%}",
                )
                for r in rows
            ],
            "lrrrrr",
        )
    )
    print(
        f"\nlinking: k = {auto.k}, threshold {args.min_score}, {auto.fallbacks} fallback links; "
        f"linking + SNN + PFNET over all notes took {took:.1f} s"
    )
    print(f"SNN: {auto.snn}")
    print(f"PFNET: {auto.pfnet}")
    top = next(r for r in rows if r.name.startswith("top-"))
    final = rows[-1]
    ratio = final.precision / top.precision if top.precision else 0.0
    print(
        f"goal: automatic links after pruning >= 0.9 x top-{args.k} precision: "
        f"{final.precision:.3f} / {top.precision:.3f} = {ratio:.2f}; "
        f"notes linked {final.linked_share:.1%}"
    )


if __name__ == "__main__":
    main()
