"""Graph maintenance and reprocessing through GraphQL.

* ``runGraphMaintenance`` (memory ``admin``): a dry run runs here, synchronously, and
  returns its report (an SNN safety abort is ``CONFLICT`` with reason
  ``snn_safety_aborted``); a real run is a ``GraphMaintenance`` job, returned at once.
* ``graphSnapshots`` / ``compareGraphSnapshots`` (memory ``admin``): the diagnostics
  history. Snapshots count every note of the memory, readable by the caller or not, so
  they belong with maintenance rather than with note reading.
* ``bulkReprocessNotes`` (``write`` on each note): tagging, embedding and linking again.
  Every id is checked first (unknown or unreadable: ``NOT_FOUND``, not-found before
  forbidden) and nothing is enqueued unless all pass. With EMBEDDING asked, linking is
  left to the Embedding job's follow-up, so it links the new vectors, not the old.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from uuid import UUID

import strawberry
from strawberry.scalars import JSON

from fortemi.auth.decision import Action, Resource
from fortemi.graph.linking.jobs import linking_spec
from fortemi.graph.maintenance.jobs import maintenance_spec
from fortemi.graph.maintenance.plan import Step
from fortemi.graph.maintenance.repository import Snapshot
from fortemi.graph.maintenance.service import compare_metrics
from fortemi.graphql.context import Info
from fortemi.graphql.jobs import Job, may_see_internals
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.ids import parse_note_id
from fortemi.platform.jobs.models import JobSpec
from fortemi.retrieval.indexing import EMBEDDING

__all__ = ["MaintenanceMutation", "MaintenanceQuery"]

CONCEPT_TAGGING = "ConceptTagging"
MAX_REPROCESS_BATCH = 1000

MaintenanceStep = strawberry.enum(Step, name="MaintenanceStep")


@strawberry.enum(description="What bulkReprocessNotes runs again")
class ReprocessStep(Enum):
    TAGGING = "tagging"
    EMBEDDING = "embedding"
    LINKING = "linking"


@strawberry.type(description="The diagnostics of one maintenance run that wrote")
class GraphSnapshot:
    id: strawberry.ID
    taken_at: datetime
    steps: list[str]
    metrics: JSON
    created_by: str | None

    @classmethod
    def of(cls, snapshot: Snapshot) -> GraphSnapshot:
        return cls(
            id=strawberry.ID(str(snapshot.id)),
            taken_at=snapshot.taken_at,
            steps=list(snapshot.steps),
            metrics=JSON(snapshot.metrics),
            created_by=snapshot.created_by,
        )


@strawberry.type(description="What a dry run would do: its figures, nothing written")
class GraphMaintenanceReport:
    steps: list[str]
    dry_run: bool
    metrics: JSON


@strawberry.type(description="A maintenance run: its job, or a dry run's report")
class GraphMaintenanceRun:
    job: Job | None
    report: GraphMaintenanceReport | None


@strawberry.type(description="One figure of two snapshots")
class MetricChange:
    name: str
    before: float | None
    after: float | None
    delta: float | None


@strawberry.type
class GraphSnapshotComparison:
    a: GraphSnapshot
    b: GraphSnapshot
    changes: list[MetricChange]


async def _admin_memory(info: Info, memory: str | None) -> str:
    name = await info.context.enter(memory) if memory else await info.context.memory()
    await info.context.authorize(Action.ADMIN, Resource.of_memory(name))
    return name


def _snapshot_id(value: strawberry.ID, field: str) -> int:
    try:
        parsed = int(str(value))
    except ValueError:
        parsed = 0
    if parsed < 1:
        raise BadUserInput(
            f"{field} is not a snapshot id; use an id from graphSnapshots", field=field
        )
    return parsed


async def _snapshot(info: Info, memory: str, given: strawberry.ID, field: str) -> Snapshot:
    found = await info.context.services.maintenance.snapshot(memory, _snapshot_id(given, field))
    if found is None:
        raise NotFound(f"No graph snapshot {given} in memory {memory!r}", id=str(given))
    return found


@strawberry.type
class MaintenanceQuery:
    @strawberry.field(description="Maintenance snapshots of the memory, newest first (admin)")
    async def graph_snapshots(
        self, info: Info, memory: str | None = None, first: int = 20
    ) -> list[GraphSnapshot]:
        name = await _admin_memory(info, memory)
        found = await info.context.services.maintenance.snapshots(name, limit=first)
        return [GraphSnapshot.of(s) for s in found]

    @strawberry.field(description="Two snapshots' figures side by side, b minus a (admin)")
    async def compare_graph_snapshots(
        self, info: Info, a: strawberry.ID, b: strawberry.ID, memory: str | None = None
    ) -> GraphSnapshotComparison:
        name = await _admin_memory(info, memory)
        first = await _snapshot(info, name, a, "a")
        second = await _snapshot(info, name, b, "b")
        return GraphSnapshotComparison(
            a=GraphSnapshot.of(first),
            b=GraphSnapshot.of(second),
            changes=[
                MetricChange(name=c.name, before=c.before, after=c.after, delta=c.delta)
                for c in compare_metrics(first.metrics, second.metrics)
            ],
        )


def _reprocess_specs(
    memory: str, note_ids: list[UUID], steps: set[ReprocessStep], actor: str
) -> list[JobSpec]:
    specs: list[JobSpec] = []
    for note_id in note_ids:
        note = str(note_id)
        if ReprocessStep.TAGGING in steps:
            specs.append(
                JobSpec(
                    type=CONCEPT_TAGGING,
                    memory=memory,
                    payload={"note_id": note},
                    dedupe_key=f"{CONCEPT_TAGGING}:{memory}:{note}",
                    requested_by=actor,
                )
            )
        if ReprocessStep.EMBEDDING in steps:
            specs.append(
                JobSpec(
                    type=EMBEDDING,
                    memory=memory,
                    payload={"note_id": note},
                    dedupe_key=f"{EMBEDDING}:{memory}:{note}",
                    requested_by=actor,
                )
            )
        elif ReprocessStep.LINKING in steps:
            specs.append(linking_spec(memory, note_id, requested_by=actor))
    return specs


@strawberry.type
class MaintenanceMutation:
    @strawberry.mutation(
        description="Maintain the memory's graph (admin): a job, or a dry run's report now"
    )
    async def run_graph_maintenance(
        self,
        info: Info,
        memory: str | None = None,
        steps: list[Step] | None = None,
        dry_run: bool = False,
        allow_aggressive_pruning: bool = False,
    ) -> GraphMaintenanceRun:
        name = await _admin_memory(info, memory)
        chosen = list(dict.fromkeys(steps)) if steps else list(Step)
        actor = info.context.caller.sub
        if dry_run:
            report = await info.context.services.maintenance.run(
                name, chosen, dry_run=True, allow_aggressive_pruning=allow_aggressive_pruning
            )
            if report.aborted is not None:
                snn = report.metrics.get("snn", {})
                raise Conflict(
                    "SNN would keep too few links (under 5 % of them, or a mean degree under "
                    "1.0); nothing was changed. Run again with allowAggressivePruning: true "
                    "to prune anyway.",
                    reason=report.aborted,
                    keptShare=snn.get("keptShare"),
                    meanDegreeAfter=snn.get("meanDegreeAfter"),
                )
            return GraphMaintenanceRun(
                job=None,
                report=GraphMaintenanceReport(
                    steps=[s.value for s in report.steps],
                    dry_run=True,
                    metrics=JSON(report.metrics),
                ),
            )
        spec = maintenance_spec(
            name,
            steps=[s.value for s in chosen],
            allow_aggressive_pruning=allow_aggressive_pruning,
            requested_by=actor,
            dedupe=False,
        )
        job, _ = await info.context.services.jobs.submit(spec)
        await info.context.services.wakeups.dispatch(job)
        return GraphMaintenanceRun(job=Job.from_model(job, internals=True), report=None)

    @strawberry.mutation(description="Run tagging, embedding and/or linking again for notes")
    async def bulk_reprocess_notes(
        self, info: Info, ids: list[strawberry.ID], steps: list[ReprocessStep]
    ) -> list[Job]:
        if not ids or len(ids) > MAX_REPROCESS_BATCH:
            raise BadUserInput(f"Give 1 to {MAX_REPROCESS_BATCH} note ids", field="ids")
        if not steps:
            raise BadUserInput(
                "Give at least one step: TAGGING, EMBEDDING or LINKING", field="steps"
            )
        memory = await info.context.memory()
        note_ids = list(dict.fromkeys(parse_note_id(i) for i in ids))
        for note_id in note_ids:
            _, note = await info.context.readable_note(note_id)
            await info.context.authorize(
                Action.WRITE, Resource.of_note(memory, note.project, note.skill)
            )
        jobs_service = info.context.services.jobs
        chosen = set(steps)
        if ReprocessStep.TAGGING in chosen and not jobs_service.knows(CONCEPT_TAGGING):
            raise BadUserInput(
                "TAGGING is not available: this server runs no concept tagging; "
                "ask for EMBEDDING or LINKING",
                field="steps",
            )
        specs = _reprocess_specs(memory, note_ids, chosen, info.context.caller.sub)
        found = await jobs_service.submit_many(specs)
        jobs = list({job.id: job for job, _ in found}.values())
        for job, created in found:
            if created:
                await info.context.services.wakeups.dispatch(job)
        internals = await may_see_internals(info, memory)
        return [Job.from_model(job, internals=internals) for job in jobs]
