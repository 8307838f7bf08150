"""Graph maintenance of a memory: read its graph, plan the run (:mod:`.plan`), write what
the plan decided in one transaction, and keep the diagnostics snapshots.

A dry run and an SNN safety abort write nothing: the report carries the figures. The
plan is computed off the event loop (it is CPU work: exact kNN, PFNET, Louvain).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.graph.maintenance.algorithms import knn_rows
from fortemi.graph.maintenance.indexed import IndexedGraph
from fortemi.graph.maintenance.plan import (
    MaintenancePlan,
    MaintenanceSettings,
    Step,
    plan_communities,
    plan_links,
    snn_k,
)
from fortemi.graph.maintenance.repository import CommunityRow, MaintenanceRepository, Snapshot
from fortemi.graph.traversal.segment_repository import forget_changes
from fortemi.graph.traversal.segments import CHANGE_RETENTION
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput

__all__ = [
    "ConceptLabels",
    "GraphMaintenance",
    "MaintenanceReport",
    "MetricChange",
    "parse_steps",
]

MAX_SNAPSHOTS_PAGE = 100
# The concepts on each note, and each concept's preferred label.
_Concepts = tuple[dict[UUID, frozenset[UUID]], dict[UUID, str]]
Ints = npt.NDArray[np.int64]


class ConceptLabels(Protocol):
    """The concepts on notes and their preferred labels (the vocabulary service)."""

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID]
    ) -> dict[UUID, frozenset[UUID]]: ...

    async def labels(self, memory: str, concept_ids: Sequence[UUID]) -> dict[UUID, str]: ...


def parse_steps(values: Sequence[str] | None) -> list[Step]:
    """Steps by name (None or empty: all), BadUserInput naming the unknown ones."""
    if not values:
        return list(Step)
    known = {step.value: step for step in Step}
    unknown = sorted({v for v in values if v.lower() not in known})
    if unknown:
        raise BadUserInput(
            f"Unknown maintenance step {', '.join(unknown)}; use {', '.join(known)}",
            field="steps",
        )
    return [known[v.lower()] for v in values]


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    steps: tuple[Step, ...]
    dry_run: bool
    aborted: str | None
    metrics: dict[str, Any]
    snapshot: Snapshot | None

    def as_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "steps": [s.value for s in self.steps],
            "dryRun": self.dry_run,
            "metrics": self.metrics,
        }
        if self.snapshot is not None:
            result["snapshotId"] = self.snapshot.id
        if self.aborted is not None:
            result.update(code="CONFLICT", reason=self.aborted)
        return result


@dataclass(frozen=True, slots=True)
class MetricChange:
    name: str  # dotted path into the metrics ("snn.edgesAfter")
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def compare_metrics(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[MetricChange]:
    """Every numeric figure of either snapshot, before (``a``) and after (``b``)."""
    left, right = _flatten(a), _flatten(b)
    return [MetricChange(name, left.get(name), right.get(name)) for name in sorted(left | right)]


def _timed_knn(matrix: npt.NDArray[np.float32], k: int) -> tuple[Ints, float]:
    """:func:`knn_rows`, and the milliseconds it took (a figure of the SNN step)."""
    began = time.perf_counter()
    found = knn_rows(matrix, k)
    return found, round((time.perf_counter() - began) * 1000, 1)


class GraphMaintenance:
    def __init__(
        self,
        db: Database,
        concepts: ConceptLabels | None = None,
        settings: MaintenanceSettings | None = None,
    ) -> None:
        self._db = db
        self._concepts = concepts
        self._settings = settings or MaintenanceSettings()
        self._repo = MaintenanceRepository()

    async def run(
        self,
        memory: str,
        steps: Sequence[Step],
        *,
        dry_run: bool = False,
        allow_aggressive_pruning: bool = False,
        set_id: int | None = None,
        actor: str | None = None,
    ) -> MaintenanceReport:
        steps = list(steps)
        repo, settings = self._repo, self._settings
        knn: asyncio.Future[tuple[Ints, float]] | None = None
        try:
            async with self._db.memory_transaction(memory) as conn:
                chosen = set_id if set_id is not None else await repo.busiest_set(conn)
                vectors = await repo.vectors(conn, chosen)
                # kNN needs only the vectors: it starts now, beside reading the links,
                # unless SNN will be skipped anyway (mean degree below k; this count is an
                # upper bound of the plan's).
                count = len(vectors[1])
                k = snn_k(count, settings)
                if Step.SNN in steps and 2 * await repo.semantic_pairs(conn) >= k * count:
                    knn = asyncio.ensure_future(asyncio.to_thread(_timed_knn, vectors[1], k))
                semantic, other = await repo.links(conn)
            graph = await asyncio.to_thread(IndexedGraph.build, vectors, semantic, other)
            # The notes' concepts are read while SNN and PFNET compute (off the event loop).
            links, concepts = await asyncio.gather(
                self._plan_links(graph, steps, allow_aggressive_pruning, knn),
                self._concepts_of(memory, graph.notes if Step.COMMUNITIES in steps else []),
            )
        finally:  # nothing of the run outlives it
            if knn is not None:
                await asyncio.gather(knn, return_exceptions=True)
        if links.aborted is not None:
            return MaintenanceReport(links.steps, dry_run, links.aborted, links.metrics, None)
        if dry_run:
            plan = await asyncio.to_thread(plan_communities, links, self._settings)
            self._labels(plan, concepts)
            return MaintenanceReport(plan.steps, dry_run, None, plan.metrics, None)
        plan, snapshot = await self._write(memory, links, concepts, actor)
        return MaintenanceReport(plan.steps, dry_run, None, plan.metrics, snapshot)

    async def _plan_links(
        self,
        graph: IndexedGraph,
        steps: Sequence[Step],
        allow_aggressive_pruning: bool,
        knn: asyncio.Future[tuple[Ints, float]] | None,
    ) -> MaintenancePlan:
        found, took = (None, None) if knn is None else await knn
        plan = await asyncio.to_thread(
            plan_links,
            graph,
            steps,
            self._settings,
            allow_aggressive_pruning=allow_aggressive_pruning,
            knn=found,
        )
        snn = plan.metrics.get("snn", {})
        if took is not None and snn.get("status") != "skipped" and "knnMs" not in snn:
            snn["knnMs"] = took  # computed beside the read, before the step's own "ms"
        return plan

    async def _concepts_of(self, memory: str, notes: Sequence[UUID]) -> _Concepts:
        """The concepts on ``notes``, and the labels of all of them: each community's
        label is then found without the database, inside the write."""
        if self._concepts is None or not notes:
            return {}, {}
        on = await self._concepts.concept_ids(memory, notes)
        every = sorted({concept for concepts in on.values() for concept in concepts})
        return on, await self._concepts.labels(memory, every) if every else {}

    @staticmethod
    def _labels(plan: MaintenancePlan, concepts: _Concepts) -> list[tuple[str | None, UUID | None]]:
        """Each community's most frequent concept (ties: the smaller id) and its label;
        the number labelled goes to the plan's figures."""
        found = plan.communities
        if found is None:
            return []
        on, named = concepts
        tops: list[UUID | None] = []
        for members in found.members:
            counts = Counter(c for note in members for c in on.get(note, frozenset()))
            best = min(counts.items(), key=lambda item: (-item[1], item[0]), default=None)
            tops.append(None if best is None else best[0])
        labels: list[tuple[str | None, UUID | None]] = [
            (None, None) if c is None else (named.get(c), c) for c in tops
        ]
        plan.metrics["communities"]["labelled"] = sum(1 for label, _ in labels if label)
        return labels

    async def _write(
        self, memory: str, links: MaintenancePlan, concepts: _Concepts, actor: str | None
    ) -> tuple[MaintenancePlan, Snapshot]:
        """What the plan decided, in one transaction: only the semantic pairs it deletes
        or whose SNN score or PFNET flag it changes are written. Louvain runs (in a
        thread) while PostgreSQL writes the links: at 10k notes each takes 1.5-3 s, and
        they use different cores."""
        repo = self._repo
        graph, semantic = links.graph, links.graph.semantic
        gone, changed = links.deleted_mask, links.changed_mask
        snn: list[float | None] | None = None
        if links.snn_scores is not None:
            snn = [None if math.isnan(s) else s for s in links.snn_scores[changed].tolist()]
        pruned = None if links.pruned_mask is None else links.pruned_mask[changed].tolist()
        async with self._db.memory_transaction(memory, subject=f"Graph of {memory}") as conn:
            louvain = asyncio.ensure_future(
                asyncio.to_thread(plan_communities, links, self._settings)
            )
            try:
                if Step.COMMUNITIES in links.steps:
                    await repo.clear_communities(conn)
                await repo.delete_pairs(
                    conn, graph.ids(semantic.a[gone]), graph.ids(semantic.b[gone])
                )
                await repo.mark(
                    conn,
                    graph.ids(semantic.a[changed]),
                    graph.ids(semantic.b[changed]),
                    snn,
                    pruned,
                )
            finally:  # nothing of the run outlives it, even when a write fails
                plan = await louvain
            labels = self._labels(plan, concepts)
            if plan.communities is not None:
                await repo.add_communities(conn, plan.communities, labels)
            steps = [s.value for s in plan.steps]
            await forget_changes(conn, CHANGE_RETENTION)
            return plan, await repo.add_snapshot(conn, steps, plan.metrics, actor)

    async def snapshots(self, memory: str, *, limit: int = 20) -> list[Snapshot]:
        """The newest ``limit`` snapshots (1..100), newest first."""
        if not 1 <= limit <= MAX_SNAPSHOTS_PAGE:
            raise BadUserInput(f"limit must be 1 to {MAX_SNAPSHOTS_PAGE}", field="limit")
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.snapshots(conn, limit)

    async def snapshot(self, memory: str, snapshot_id: int) -> Snapshot | None:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.snapshot(conn, snapshot_id)

    async def communities(self, memory: str) -> list[CommunityRow]:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.communities(conn)
