"""The ``GraphBackfill`` job: notes that exist without their graph work get it.

A note's tagging and linking are enqueued by its own changes (tagging in the note's
transaction, linking by its ``Embedding`` job). Notes written before the graph existed, or
whose chain was lost (a restored database, a job that failed for good, a worker stopped
between two tiers), never get it that way. The sweep finds them from what the work leaves
behind, not from job history:

* **tagging**: ``note_tagged`` holds the note version the ``ConceptTagging`` chain last
  finished on; a live note with no mark, or a mark older than its version, is missing it.
* **linking**: the ``Linking`` job writes the note's vector (``note_embedding``) in the
  set it links in before its links; a live note with no vector in the memory's linking set
  (the set search serves from) whose chunk vectors there are complete is missing it. A
  note not embedded yet is the ``Embedding`` job's, whose follow-up links it.

Every job it enqueues carries the same dedupe key as the one a note change enqueues, so
a note waiting for its work gets no second job, and a sweep run twice enqueues nothing
new. A run looks at no more than ``limit`` notes per kind; when it stopped at the bound it
enqueues its own continuation, which resumes after the last note seen (keyset on the note
id, in the payload), so a large memory is swept in bounded steps. It runs at the lowest
priority: the work it enqueues goes first.

It is enqueued for every memory when a worker starts (:func:`startup_specs`, through the
registry's start-up hook) and on demand (``fortemi graph backfill``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from uuid import UUID

from fortemi.graph.linking.jobs import linking_spec
from fortemi.graph.linking.repository import LinkingRepository
from fortemi.graph.tagging.jobs import tagging_spec
from fortemi.graph.tagging.repository import TaggedRepository
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobSpec, JobType, Tier
from fortemi.retrieval.service import ChunkVectorService

__all__ = [
    "DEFAULT_LIMIT",
    "GRAPH_BACKFILL",
    "GraphBackfill",
    "Missing",
    "backfill_spec",
    "graph_backfill_type",
    "startup_specs",
]

GRAPH_BACKFILL: Final = "GraphBackfill"
DEFAULT_LIMIT: Final = 1000  # notes looked at per kind and run
_FIRST: Final = UUID(int=0)


def backfill_spec(
    memory: str,
    *,
    limit: int = DEFAULT_LIMIT,
    resume: Missing | None = None,
    requested_by: str | None = None,
) -> JobSpec:
    """A sweep of ``memory``: from the start, or continuing the step ``resume``."""
    payload: dict[str, object] = {"limit": limit}
    if resume is not None:
        payload["taggingAfter"] = _cursor_text(resume.tagging_after)
        payload["linkingAfter"] = _cursor_text(resume.linking_after)
    return JobSpec(
        type=GRAPH_BACKFILL,
        memory=memory,
        payload=payload,
        dedupe_key=f"{GRAPH_BACKFILL}:{memory}",
        requested_by=requested_by,
    )


def startup_specs(memories: Sequence[str], *, limit: int = DEFAULT_LIMIT) -> list[JobSpec]:
    """A sweep of each memory from the start (what a worker enqueues when it starts)."""
    return [backfill_spec(memory, limit=limit) for memory in memories]


@dataclass(frozen=True, slots=True)
class Missing:
    """What one step of a sweep found: notes missing tagging, notes missing linking (in
    ``set_id``), and where to resume each (None: that kind is swept to the end)."""

    tagging: tuple[UUID, ...]
    linking: tuple[UUID, ...]
    set_id: int | None
    tagging_after: UUID | None
    linking_after: UUID | None

    @property
    def done(self) -> bool:
        return self.tagging_after is None and self.linking_after is None


class GraphBackfill:
    """Finds a memory's notes whose tagging or linking is missing (see the module)."""

    def __init__(self, db: Database, vectors: ChunkVectorService, *, tagging: bool = True) -> None:
        self._db = db
        self._vectors = vectors
        self._tagging = tagging
        self._tagged = TaggedRepository()
        self._links = LinkingRepository()

    async def missing(
        self,
        memory: str,
        *,
        limit: int = DEFAULT_LIMIT,
        tagging_after: UUID | None = _FIRST,
        linking_after: UUID | None = _FIRST,
    ) -> Missing:
        """One bounded step: up to ``limit`` notes of each kind after the ids given (None:
        skip that kind)."""
        tagging: Sequence[UUID] = []
        unlinked: Sequence[UUID] = []
        set_id = await self._vectors.linking_set(memory) if linking_after is not None else None
        async with self._db.memory_transaction(memory) as conn:
            if self._tagging and tagging_after is not None:
                tagging = await self._tagged.untagged(conn, tagging_after, limit)
            if set_id is not None and linking_after is not None:
                unlinked = await self._links.unlinked(conn, set_id, linking_after, limit)
        held = (
            await self._vectors.held_whole(memory, set_id, unlinked)
            if set_id is not None
            else set()
        )
        return Missing(
            tagging=tuple(tagging),
            linking=tuple(note for note in unlinked if note in held),
            set_id=set_id,
            tagging_after=tagging[-1] if len(tagging) == limit else None,
            linking_after=unlinked[-1] if len(unlinked) == limit else None,
        )

    def specs(
        self, memory: str, missing: Missing, requested_by: str | None = None
    ) -> list[JobSpec]:
        """The jobs that do the missing work (deduplicated per note like a change's)."""
        return [
            *(tagging_spec(memory, note) for note in missing.tagging),
            *(
                linking_spec(memory, note, missing.set_id, requested_by=requested_by)
                for note in missing.linking
            ),
        ]


class _BackfillHandler:
    def __init__(self, backfill: GraphBackfill) -> None:
        self._backfill = backfill

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        job = context.job
        if job.memory is None:
            return JobOutcome.failure("memory_required")
        try:
            limit = _limit(job.payload.get("limit", DEFAULT_LIMIT))
            tagging_after = _cursor(job.payload.get("taggingAfter"))
            linking_after = _cursor(job.payload.get("linkingAfter"))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        missing = await self._backfill.missing(
            job.memory, limit=limit, tagging_after=tagging_after, linking_after=linking_after
        )
        for spec in self._backfill.specs(job.memory, missing, job.requested_by):
            await context.enqueue(spec)
        result: dict[str, object] = {
            "tagging": len(missing.tagging),
            "linking": len(missing.linking),
            "setId": missing.set_id,
            "done": missing.done,
        }
        if not missing.done:
            # Each kind resumes after its last note; a kind swept to the end is not read again.
            await context.enqueue(
                backfill_spec(
                    job.memory, limit=limit, resume=missing, requested_by=job.requested_by
                )
            )
        return JobOutcome.success(result)


def _limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise ValueError(f"limit must be an integer in 1..100000, not {value!r}")
    return value


_DONE: Final = "done"


def _cursor_text(after: UUID | None) -> str:
    return _DONE if after is None else str(after)


def _cursor(value: object) -> UUID | None:
    """A payload cursor: absent is the start, ``"done"`` a kind already swept."""
    if value is None:
        return _FIRST
    if value == _DONE:
        return None
    return UUID(str(value))


def graph_backfill_type(backfill: GraphBackfill) -> JobType:
    """The ``GraphBackfill`` job type (cpu tier, lowest priority; payload ``limit`` and the
    cursors ``taggingAfter``/``linkingAfter``)."""
    return JobType(
        name=GRAPH_BACKFILL, tier=Tier.CPU, priority=1, handler=_BackfillHandler(backfill)
    )
