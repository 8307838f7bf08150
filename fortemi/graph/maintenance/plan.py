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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from uuid import UUID

import networkx as nx
import numpy as np

from fortemi.graph.linking.selection import adaptive_k
from fortemi.graph.maintenance.algorithms import (
    Communities,
    NoteGraph,
    Pair,
    Vector,
    communities,
    knn_sets,
    normalise,
    pfnet_prune,
    snn_scores,
)

__all__ = [
    "SNN_SAFETY_ABORTED",
    "GraphState",
    "MaintenancePlan",
    "MaintenanceSettings",
    "Step",
    "plan_maintenance",
]

SNN_SAFETY_ABORTED = "snn_safety_aborted"


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


@dataclass(frozen=True, slots=True)
class GraphState:
    """A memory's graph as maintenance reads it: the notes (nodes), their vectors in the
    linking set, semantic pairs with their score and the pairs PFNET pruned last time,
    and explicit/wiki pairs with their score."""

    notes: Sequence[UUID]
    vectors: Mapping[UUID, Vector]
    semantic: Mapping[Pair, float]
    pruned: frozenset[Pair] = frozenset()
    other: Mapping[Pair, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MaintenancePlan:
    """What a run decided. ``aborted`` names why nothing may be written; ``snn`` is None
    when SNN did not run (scores stay), ``pruned`` None when PFNET did not (flags stay),
    ``communities`` None when Louvain did not."""

    steps: tuple[Step, ...]
    aborted: str | None
    deleted: frozenset[Pair]
    snn: dict[Pair, float] | None
    pruned: frozenset[Pair] | None
    communities: Communities | None
    metrics: dict[str, Any]


def _ms_since(began: float) -> float:
    """Milliseconds since ``began`` (a perf_counter reading): each step's cost, in its
    figures, so snapshots show where a run's time went."""
    return round((time.perf_counter() - began) * 1000, 1)


def _mean_degree(edges: int, nodes: int) -> float:
    return 2.0 * edges / nodes if nodes else 0.0


def _snn(
    state: GraphState,
    settings: MaintenanceSettings,
    allow_aggressive: bool,
    metrics: dict[str, Any],
) -> tuple[dict[Pair, float] | None, frozenset[Pair], str | None]:
    """SNN scores of the semantic pairs it keeps, the pairs it deletes, and the abort
    reason, if any; its figures go to ``metrics["snn"]``."""
    nodes = len(state.notes)
    edges = len(state.semantic)
    k = adaptive_k(len(state.vectors), low=settings.k_min, high=settings.k_max)
    before = _mean_degree(edges, nodes)
    report: dict[str, Any] = {"k": k, "edgesBefore": edges, "meanDegreeBefore": before}
    metrics["snn"] = report
    if before < k:
        report.update(status="skipped", reason=f"mean degree {before:.2f} is below k = {k}")
        report.update(edgesAfter=edges)
        return None, frozenset(), None
    ids = sorted(state.vectors)
    row = {note: i for i, note in enumerate(ids)}
    matrix = (
        np.vstack([state.vectors[note] for note in ids]).astype(np.float32)
        if ids
        else np.zeros((0, 1), dtype=np.float32)
    )
    knn = knn_sets(matrix, k)
    scorable = [p for p in sorted(state.semantic) if p[0] in row and p[1] in row]
    scores = dict(
        zip(scorable, snn_scores(((row[a], row[b]) for a, b in scorable), knn, k), strict=True)
    )
    kept = {p: s for p, s in scores.items() if s >= settings.snn_threshold}
    # A pair one of whose notes has no vector cannot be judged: it stays, unscored.
    deleted = frozenset(p for p in scores if p not in kept)
    after_edges = edges - len(deleted)
    after = _mean_degree(after_edges, nodes)
    share = after_edges / edges if edges else 1.0
    covered = {note for p in kept for note in p}
    report.update(
        status="ran",
        edgesAfter=after_edges,
        deleted=len(deleted),
        keptShare=share,
        meanDegreeAfter=after,
        coverage=len(covered) / nodes if nodes else 0.0,
    )
    unsafe = share < settings.snn_min_kept_share or after < settings.snn_min_mean_degree
    if unsafe and not allow_aggressive:
        report["status"] = "aborted"
        return kept, deleted, SNN_SAFETY_ABORTED
    return kept, deleted, None


def _traversable(
    state: GraphState,
    semantic: Mapping[Pair, float],
    pruned: frozenset[Pair],
    bounds: tuple[float, float],
    gamma: float,
) -> NoteGraph:
    graph: NoteGraph = nx.Graph()
    graph.add_nodes_from(state.notes)
    for (a, b), score in semantic.items():
        if (a, b) not in pruned:
            graph.add_edge(a, b, weight=normalise(score, *bounds, gamma))
    for (a, b), score in state.other.items():
        if graph.has_edge(a, b):
            graph[a][b]["weight"] += score
        else:
            graph.add_edge(a, b, weight=score)
    return graph


def plan_maintenance(
    state: GraphState,
    steps: Sequence[Step],
    settings: MaintenanceSettings,
    *,
    allow_aggressive_pruning: bool = False,
) -> MaintenancePlan:
    """The plan of a run of ``steps`` (in their fixed order, whatever order is given)."""
    chosen = tuple(step for step in Step if step in set(steps))
    nodes = len(state.notes)
    all_edges = len(set(state.semantic) | set(state.other))
    metrics: dict[str, Any] = {
        "nodes": nodes,
        "edgesBefore": all_edges,
        "semanticEdgesBefore": len(state.semantic),
        "meanDegreeBefore": _mean_degree(all_edges, nodes),
    }
    snn: dict[Pair, float] | None = None
    deleted: frozenset[Pair] = frozenset()
    if Step.SNN in chosen:
        began = time.perf_counter()
        snn, deleted, aborted = _snn(state, settings, allow_aggressive_pruning, metrics)
        metrics["snn"]["ms"] = _ms_since(began)
        if aborted is not None:
            return MaintenancePlan(chosen, aborted, deleted, snn, None, None, metrics)
    semantic = {p: s for p, s in state.semantic.items() if p not in deleted}
    pruned = state.pruned & frozenset(semantic)
    new_pruned: frozenset[Pair] | None = None
    if Step.PFNET in chosen:
        paths = _traversable(state, semantic, frozenset(), (0.0, 1.0), 1.0)
        began = time.perf_counter()
        new_pruned = frozenset(pfnet_prune(sorted(semantic), paths, state.vectors))
        took = _ms_since(began)
        pruned = new_pruned
        metrics["pfnet"] = {
            "edgesBefore": len(semantic),
            "edgesAfter": len(semantic) - len(pruned),
            "pruned": len(pruned),
            "retention": (len(semantic) - len(pruned)) / len(semantic) if semantic else 1.0,
            "ms": took,
        }
    scores = list(semantic.values())
    bounds = (min(scores), max(scores)) if scores else (0.0, 1.0)
    if Step.NORMALIZE in chosen:
        metrics["normalize"] = {"min": bounds[0], "max": bounds[1], "gamma": settings.gamma}
    graph = _traversable(state, semantic, pruned, bounds, settings.gamma)
    found: Communities | None = None
    if Step.COMMUNITIES in chosen:
        began = time.perf_counter()
        found = communities(graph, resolution=settings.resolution)
        took = _ms_since(began)
        metrics["communities"] = {
            "count": len(found.members),
            "largest": len(found.members[0]) if found.members else 0,
            "modularity": found.modularity,
            "resolution": settings.resolution,
            "ms": took,
        }
    metrics.update(
        edgesAfter=graph.number_of_edges(),
        meanDegreeAfter=_mean_degree(graph.number_of_edges(), nodes),
        isolatedNodes=sum(1 for _ in nx.isolates(graph)),
    )
    return MaintenancePlan(chosen, None, deleted, snn, new_pruned, found, metrics)
