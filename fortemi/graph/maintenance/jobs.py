"""The ``GraphMaintenance`` job: normalise, SNN, PFNET, Louvain and a snapshot, for a
memory's graph; enqueued by ``Linking`` (one pending per memory) or asked for.

An SNN safety abort ends the job as failed with the code ``snn_safety_aborted``: nothing
was written, the later steps did not run, and the job list shows why at a glance.
Running with the payload ``allow_aggressive_pruning`` lets the same plan through.
"""

from __future__ import annotations

from typing import Any

from fortemi.graph.events import graph_event
from fortemi.graph.maintenance.service import GraphMaintenance, parse_steps
from fortemi.platform.errors import BadUserInput
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobSpec, JobType, Tier

__all__ = ["GRAPH_MAINTENANCE", "maintenance_job_type", "maintenance_spec"]

GRAPH_MAINTENANCE = "GraphMaintenance"


def maintenance_spec(
    memory: str,
    *,
    steps: list[str] | None = None,
    dry_run: bool = False,
    allow_aggressive_pruning: bool = False,
    set_id: int | None = None,
    requested_by: str | None = None,
    dedupe: bool = True,
) -> JobSpec:
    """A ``GraphMaintenance`` run (``steps`` None: all). Automatic runs share one dedupe
    key per memory; a run a person asks for with its own options does not."""
    payload: dict[str, object] = {
        "dry_run": dry_run,
        "allow_aggressive_pruning": allow_aggressive_pruning,
    }
    if steps is not None:
        payload["steps"] = list(steps)
    if set_id is not None:
        payload["set_id"] = int(set_id)
    return JobSpec(
        type=GRAPH_MAINTENANCE,
        memory=memory,
        payload=payload,
        dedupe_key=f"{GRAPH_MAINTENANCE}:{memory}" if dedupe else None,
        requested_by=requested_by,
    )


def _payload(payload: dict[str, Any]) -> tuple[list[str] | None, bool, bool, int | None]:
    steps = payload.get("steps")
    set_id = payload.get("set_id")
    dry_run = payload.get("dry_run", False)
    aggressive = payload.get("allow_aggressive_pruning", False)
    if steps is not None and not (
        isinstance(steps, list) and all(isinstance(s, str) for s in steps)
    ):
        raise ValueError("steps")
    if set_id is not None and (isinstance(set_id, bool) or not isinstance(set_id, int)):
        raise ValueError("set_id")
    if not isinstance(dry_run, bool) or not isinstance(aggressive, bool):
        raise ValueError("flags")
    return steps, dry_run, aggressive, set_id


class _MaintenanceHandler:
    def __init__(self, maintenance: GraphMaintenance) -> None:
        self._maintenance = maintenance

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        job = context.job
        if job.memory is None:
            return JobOutcome.failure("memory_required")
        try:
            names, dry_run, aggressive, set_id = _payload(job.payload)
            steps = parse_steps(names)
        except (ValueError, BadUserInput):
            return JobOutcome.failure("invalid_payload")
        report = await self._maintenance.run(
            job.memory,
            steps,
            dry_run=dry_run,
            allow_aggressive_pruning=aggressive,
            set_id=set_id,
            actor=job.requested_by,
        )
        if report.aborted is not None:
            return JobOutcome.failure(report.aborted)
        if report.snapshot is not None:
            await context.publish(
                graph_event("maintained", job.memory, job.requested_by, report.as_result())
            )
        return JobOutcome.success(report.as_result())


def maintenance_job_type(maintenance: GraphMaintenance) -> JobType:
    return JobType(
        name=GRAPH_MAINTENANCE,
        tier=Tier.CPU,
        priority=2,
        handler=_MaintenanceHandler(maintenance),
        max_attempts=3,
    )
