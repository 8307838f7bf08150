"""The ``Linking`` job: a note's automatic links, after its embedding.

Enqueued by the ``Embedding`` job once it has written a note's vectors (the composition
root hands it :func:`linking_followups`) and by ``bulkReprocessNotes``; deduplicated per
note, so a burst of edits links once. It then enqueues ``GraphMaintenance`` for the
memory, deduplicated to one pending run per memory: linking a thousand notes maintains
the graph once the queue drains rather than a thousand times.
"""

from __future__ import annotations

from uuid import UUID

from fortemi.graph.events import graph_event
from fortemi.graph.linking.service import NoteLinker
from fortemi.graph.maintenance.jobs import maintenance_spec
from fortemi.platform.ids import to_global_id
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobSpec, JobType, Tier

__all__ = ["LINKING", "linking_followups", "linking_job_type", "linking_spec", "set_id_of"]

LINKING = "Linking"


def linking_spec(
    memory: str, note_id: UUID, set_id: int | None = None, *, requested_by: str | None = None
) -> JobSpec:
    payload: dict[str, object] = {"note_id": str(note_id)}
    if set_id is not None:
        payload["set_id"] = int(set_id)
    return JobSpec(
        type=LINKING,
        memory=memory,
        payload=payload,
        dedupe_key=f"{LINKING}:{memory}:{note_id}",
        requested_by=requested_by,
    )


def linking_followups(memory: str, note_id: UUID, set_id: int) -> list[JobSpec]:
    """What the ``Embedding`` job enqueues after writing a note's vectors in a set."""
    return [linking_spec(memory, note_id, set_id)]


def set_id_of(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"set_id must be an integer, not {value!r}")
    return value


class _LinkingHandler:
    def __init__(self, linker: NoteLinker) -> None:
        self._linker = linker

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        if memory is None:
            return JobOutcome.failure("memory_required")
        try:
            note_id = UUID(str(context.job.payload.get("note_id")))
            set_id = set_id_of(context.job.payload.get("set_id"))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        outcome = await self._linker.link(memory, note_id, set_id)
        if outcome.skipped is None:
            # graph.* reaches memory-wide readers only, so naming the note leaks nothing.
            await context.publish(
                graph_event(
                    "linked",
                    memory,
                    context.job.requested_by,
                    {"noteId": to_global_id("Note", note_id), **outcome.as_result()},
                )
            )
            await context.enqueue(maintenance_spec(memory, set_id=outcome.set_id))
        return JobOutcome.success(outcome.as_result())


def linking_job_type(linker: NoteLinker) -> JobType:
    return JobType(name=LINKING, tier=Tier.CPU, priority=3, handler=_LinkingHandler(linker))
