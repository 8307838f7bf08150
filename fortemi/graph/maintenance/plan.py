"""One maintenance run, computed without touching storage: normalisation bounds, SNN,
PFNET, Louvain and the diagnostics, from a :class:`GraphState`. The job writes what the
plan says (or nothing: a dry run, an SNN safety abort); a benchmark calls it directly.

Decisions (the README gives the reasons at more length):

* SNN deletes the semantic links it prunes (they were noise), and stores ``snn`` on those
  it keeps; it never touches explicit or wiki links. It is skipped when the graph is
  sparser than its own k (mean degree ``2E/N < k``): shared neighbourhoods mean nothing
  there. It aborts (nothing written, later steps not run) when its plan would keep fewer
  than 5 % of the semantic links or leave a mean degree under 1.0, unless the caller
  allows aggressive pruning.
* PFNET marks semantic links ``pruned`` (kept, not traversed). Explicit and wiki links are
  never pruned but do serve as the two-hop path W: a person's link is evidence the two
  notes are close, and its distance is still the vectors'.
* Louvain runs on the traversable graph: every link not pruned, any kind, weighted by its
  normalised score (semantic) or its own score (explicit, wiki), summed when two kinds
  join the same pair. Communities then match what traversal walks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from fortemi.graph.linking.selection import adaptive_k
from fortemi.graph.maintenance.algorithms import (
    Pair,
    knn_rows,
    normalise_all,
    pfnet_mask,
    shared_counts,
)
from fortemi.graph.maintenance.communities import Communities, partition
from fortemi.graph.maintenance.indexed import Edges, GraphState, IndexedGraph

__all__ = [
    "SNN_SAFETY_ABORTED",
    "GraphState",
    "MaintenancePlan",
    "MaintenanceSettings",
    "Step",
    "plan_communities",
    "plan_links",
    "plan_maintenance",
    "snn_k",
]

SNN_SAFETY_ABORTED = "snn_safety_aborted"
Mask = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]


class Step(StrEnum):
    NORMALIZE = "normalize"
    SNN = "snn"
    PFNET = "pfnet"
    COMMUNITIES = "communities"


@dataclass(frozen=True, slots=True)
class MaintenanceSettings:
    k_min: int = 5
    k_max: int = 15
    snn_threshold: float = 0.10
    snn_min_kept_share: float = 0.05
    snn_min_mean_degree: float = 1.0
    gamma: float = 1.0
    resolution: float = 1.0


@dataclass(frozen=True)
class MaintenancePlan:
    """What a run decided, per semantic edge of ``graph``: ``deleted_mask`` (SNN deletes
    it), ``snn_scores`` (its new SNN score, NaN when it has none; None when SNN did not
    run: scores stay), ``pruned_mask`` (PFNET marks it; None when PFNET did not run:
    flags stay). ``communities`` is None when Louvain did not run; ``aborted`` names why
    nothing may be written. ``deleted``, ``snn`` and ``pruned`` give the same by note-id
    pairs."""

    steps: tuple[Step, ...]
    aborted: str | None
    graph: IndexedGraph
    deleted_mask: Mask
    snn_scores: npt.NDArray[np.float64] | None
    pruned_mask: Mask | None
    communities: Communities | None
    metrics: dict[str, Any]

    @cached_property
    def changed_mask(self) -> Mask:
        """The semantic edges, not deleted, whose stored SNN score (as ``real``) or PFNET
        flag this plan changes: the only rows a run rewrites. A second run over an
        unchanged graph rewrites none."""
        graph = self.graph
        changed = np.zeros(len(graph.semantic), dtype=bool)
        if self.snn_scores is not None:
            new, old = self.snn_scores.astype(np.float32), graph.snn.astype(np.float32)
            changed |= ~((new == old) | (np.isnan(new) & np.isnan(old)))
        if self.pruned_mask is not None:
            changed |= self.pruned_mask != graph.pruned
        return changed & ~self.deleted_mask

    @cached_property
    def deleted(self) -> frozenset[Pair]:
        return frozenset(self.graph.pairs(self.deleted_mask))

    @cached_property
    def snn(self) -> dict[Pair, float] | None:
        if self.snn_scores is None:
            return None
        scored = ~self.deleted_mask & ~np.isnan(self.snn_scores)
        return dict(zip(self.graph.pairs(scored), self.snn_scores[scored].tolist(), strict=True))

    @cached_property
    def pruned(self) -> frozenset[Pair] | None:
        return None if self.pruned_mask is None else frozenset(self.graph.pairs(self.pruned_mask))


def _ms_since(began: float) -> float:
    """Milliseconds since ``began`` (a perf_counter reading): each step's cost, in its
    figures, so snapshots show where a run's time went."""
    return round((time.perf_counter() - began) * 1000, 1)


def _mean_degree(edges: int, nodes: int) -> float:
    return 2.0 * edges / nodes if nodes else 0.0


def snn_k(vectors: int, settings: MaintenanceSettings) -> int:
    """SNN's k for a memory of ``vectors`` note vectors (the linking's adaptive k)."""
    return adaptive_k(vectors, low=settings.k_min, high=settings.k_max)


def _snn(
    graph: IndexedGraph,
    settings: MaintenanceSettings,
    allow_aggressive: bool,
    metrics: dict[str, Any],
    knn: Ints | None,
) -> tuple[npt.NDArray[np.float64] | None, Mask, str | None]:
    """SNN scores of the semantic edges (NaN: not scored), the edges it deletes, and the
    abort reason, if any; its figures go to ``metrics["snn"]``. ``knn``: the vectors'
    :func:`knn_rows` for this k, if already computed."""
    nodes = graph.size
    semantic = graph.semantic
    edges = len(semantic)
    none = np.zeros(edges, dtype=bool)
    k = snn_k(graph.matrix.shape[0], settings)
    before = _mean_degree(edges, nodes)
    report: dict[str, Any] = {"k": k, "edgesBefore": edges, "meanDegreeBefore": before}
    metrics["snn"] = report
    if before < k:
        report.update(status="skipped", reason=f"mean degree {before:.2f} is below k = {k}")
        report.update(edgesAfter=edges)
        return None, none, None
    if knn is None or len(knn) != graph.matrix.shape[0]:
        began = time.perf_counter()
        knn = knn_rows(graph.matrix, k)
        report["knnMs"] = _ms_since(began)
    row_a, row_b = graph.rows[semantic.a], graph.rows[semantic.b]
    # A pair one of whose notes has no vector cannot be judged: it stays, unscored.
    scorable = (row_a >= 0) & (row_b >= 0)
    scores = np.full(edges, np.nan)
    counts = shared_counts(knn, row_a[scorable], row_b[scorable])
    scores[scorable] = np.minimum(1.0, counts / k)
    deleted = scorable & ~(scores >= settings.snn_threshold)
    kept = scorable & ~deleted
    after_edges = edges - int(deleted.sum())
    after = _mean_degree(after_edges, nodes)
    share = after_edges / edges if edges else 1.0
    covered = len(np.union1d(semantic.a[kept], semantic.b[kept]))
    report.update(
        status="ran",
        edgesAfter=after_edges,
        deleted=int(deleted.sum()),
        keptShare=share,
        meanDegreeAfter=after,
        coverage=covered / nodes if nodes else 0.0,
    )
    unsafe = share < settings.snn_min_kept_share or after < settings.snn_min_mean_degree
    if unsafe and not allow_aggressive:
        report["status"] = "aborted"
        return scores, deleted, SNN_SAFETY_ABORTED
    return scores, deleted, None


def _traversable(graph: IndexedGraph, semantic: Edges, weights: npt.NDArray[np.float64]) -> Edges:
    """The graph Louvain and the metrics see: ``semantic`` weighted ``weights``, plus
    every explicit and wiki edge at its score, added to the semantic weight when both
    join the same pair."""
    other = graph.other
    merged, _ = Edges.of(
        np.concatenate([semantic.a, other.a]),
        np.concatenate([semantic.b, other.b]),
        np.zeros(len(semantic) + len(other)),
        merge_max=False,
    )
    n = graph.size
    keys = merged.keys(n)
    total = np.zeros(len(merged))
    # Semantic weight first, then the other score: a + b, as the links are read.
    total[np.searchsorted(keys, semantic.keys(n))] += weights
    np.add.at(total, np.searchsorted(keys, other.keys(n)), other.score)
    return Edges(merged.a, merged.b, total)


def plan_maintenance(
    state: GraphState | IndexedGraph,
    steps: Sequence[Step],
    settings: MaintenanceSettings,
    *,
    allow_aggressive_pruning: bool = False,
) -> MaintenancePlan:
    """The plan of a run of ``steps`` (in their fixed order, whatever order is given)."""
    links = plan_links(state, steps, settings, allow_aggressive_pruning=allow_aggressive_pruning)
    return links if links.aborted is not None else plan_communities(links, settings)


def plan_links(
    state: GraphState | IndexedGraph,
    steps: Sequence[Step],
    settings: MaintenanceSettings,
    *,
    allow_aggressive_pruning: bool = False,
    knn: Ints | None = None,
) -> MaintenancePlan:
    """The first half of a plan, all that decides what happens to the links: SNN, PFNET,
    the normalisation bounds. :func:`plan_communities` completes it; the job writes the
    links meanwhile. ``knn``: :func:`knn_rows` of the graph's matrix with
    :func:`snn_k`, when the caller computed it already (beside reading the links)."""
    graph = state if isinstance(state, IndexedGraph) else IndexedGraph.of(state)
    chosen = tuple(step for step in Step if step in set(steps))
    nodes = graph.size
    all_edges = len(np.union1d(graph.semantic.keys(nodes), graph.other.keys(nodes)))
    metrics: dict[str, Any] = {
        "nodes": nodes,
        "edgesBefore": all_edges,
        "semanticEdgesBefore": len(graph.semantic),
        "meanDegreeBefore": _mean_degree(all_edges, nodes),
    }
    snn: npt.NDArray[np.float64] | None = None
    deleted = np.zeros(len(graph.semantic), dtype=bool)
    if Step.SNN in chosen:
        began = time.perf_counter()
        snn, deleted, aborted = _snn(graph, settings, allow_aggressive_pruning, metrics, knn)
        metrics["snn"]["ms"] = _ms_since(began)
        if aborted is not None:
            return MaintenancePlan(chosen, aborted, graph, deleted, snn, None, None, metrics)
    alive = ~deleted
    semantic = graph.semantic.subset(alive)
    new_pruned: Mask | None = None
    if Step.PFNET in chosen:
        began = time.perf_counter()
        paths = _traversable(graph, semantic, np.zeros(len(semantic)))
        pruned = pfnet_mask(graph.rows, graph.matrix, (paths.a, paths.b), (semantic.a, semantic.b))
        new_pruned = np.zeros(len(graph.semantic), dtype=bool)
        new_pruned[alive] = pruned
        count = int(pruned.sum())
        metrics["pfnet"] = {
            "edgesBefore": len(semantic),
            "edgesAfter": len(semantic) - count,
            "pruned": count,
            "retention": (len(semantic) - count) / len(semantic) if len(semantic) else 1.0,
            "ms": _ms_since(began),
        }
    if Step.NORMALIZE in chosen:
        low, high = _bounds(semantic)
        metrics["normalize"] = {"min": low, "max": high, "gamma": settings.gamma}
    return MaintenancePlan(chosen, None, graph, deleted, snn, new_pruned, None, metrics)


def _bounds(semantic: Edges) -> tuple[float, float]:
    """Min and max of the semantic scores, the normalisation's bounds."""
    scores = semantic.score
    return (float(scores.min()), float(scores.max())) if len(scores) else (0.0, 1.0)


def plan_communities(links: MaintenancePlan, settings: MaintenanceSettings) -> MaintenancePlan:
    """``links`` (from :func:`plan_links`, not aborted) completed: Louvain on the
    traversable graph when its step was chosen, and the figures after the run."""
    graph, nodes = links.graph, links.graph.size
    alive = ~links.deleted_mask
    semantic = graph.semantic.subset(alive)
    pruned = (graph.pruned if links.pruned_mask is None else links.pruned_mask)[alive]
    walked = semantic.subset(~pruned)
    weights = normalise_all(walked.score, *_bounds(semantic), settings.gamma)
    traversable = _traversable(graph, walked, weights)
    metrics = dict(links.metrics)
    found: Communities | None = None
    if Step.COMMUNITIES in links.steps:
        began = time.perf_counter()
        louvain = partition(
            nodes, traversable.a, traversable.b, traversable.score, resolution=settings.resolution
        )
        found = louvain.on(graph.notes)
        metrics["communities"] = {
            "count": len(found.members),
            "largest": len(found.members[0]) if found.members else 0,
            "modularity": found.modularity,
            "resolution": settings.resolution,
            "ms": _ms_since(began),
        }
    touched = len(np.union1d(traversable.a, traversable.b))
    metrics.update(
        edgesAfter=len(traversable),
        meanDegreeAfter=_mean_degree(len(traversable), nodes),
        isolatedNodes=nodes - touched,
    )
    return replace(links, communities=found, metrics=metrics)
