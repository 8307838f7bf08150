"""Jobs as clients see them: read, list, count, cancel, retry, pause; and bulk purges.

A job in a memory is governed by that memory's policy (read to see it, write to cancel
or retry it, admin to pause the memory's jobs); a job without a memory, and pausing
everything, by the ``system`` resource. Jobs the caller may not see answer NOT_FOUND, and
so does a memory the caller may not enter.

A job's ``dedupeKey`` names what it works on (an ``Embedding`` job's names its note,
whichever project or skill that note is in), so it is shown only to those who may
``admin`` what governs the job, who see every note's events through webhooks anyway;
everyone else reads null.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from uuid import UUID

import strawberry
from strawberry.scalars import JSON

from fortemi.auth.decision import Action, Resource
from fortemi.graphql.context import Info
from fortemi.graphql.pagination import Connection, Edge, PageInfo
from fortemi.platform import events as bus
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.ids import parse_id, parse_note_id, to_global_id
from fortemi.platform.jobs.models import Job as JobModel
from fortemi.platform.jobs.models import JobSpec, JobStatus, Tier
from fortemi.platform.jobs.service import JobFilter as JobFilterModel

__all__ = ["JobMutation", "JobQuery", "may_see_internals", "visible_job", "without_internals"]

MAX_PURGE_BATCH = 1000

JobStatusEnum = strawberry.enum(JobStatus, name="JobStatus")
TierEnum = strawberry.enum(Tier, name="Tier")


@strawberry.type(description="A unit of background work and where it stands")
class Job:
    id: strawberry.ID
    type: str
    memory: str | None
    tier: Tier
    priority: int
    status: JobStatus
    attempts: int
    max_attempts: int
    progress: int
    progress_message: str | None
    failure_class: str | None
    failure_code: str | None
    result: JSON | None
    dedupe_key: str | None
    requested_by: str | None
    next_attempt_at: datetime
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def from_model(cls, job: JobModel, *, internals: bool) -> Job:
        """``internals``: whether the reader may see the dedupe key (see the module)."""
        return cls(
            id=strawberry.ID(to_global_id("Job", job.id)),
            type=job.type,
            memory=job.memory,
            tier=job.tier,
            priority=job.priority,
            status=job.status,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            progress=job.progress,
            progress_message=job.progress_message,
            failure_class=job.failure_class.value if job.failure_class else None,
            failure_code=job.failure_code,
            result=JSON(job.result) if job.result is not None else None,
            dedupe_key=job.dedupe_key if internals else None,
            requested_by=job.requested_by,
            next_attempt_at=job.next_attempt_at,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
        )


@strawberry.input
class JobFilter:
    status: JobStatus | None = None
    type: str | None = None
    tier: Tier | None = None
    memory: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


@strawberry.type
class JobEdge(Edge[Job]):
    pass


@strawberry.type
class JobConnection(Connection[JobEdge]):
    pass


@strawberry.type
class JobCount:
    key: str
    count: int


@strawberry.type(description="How much work there is, and how old the oldest waiting job is")
class JobStats:
    by_status: list[JobCount]
    pending_by_tier: list[JobCount]
    oldest_pending_at: datetime | None


def _job_id(value: str) -> UUID:
    return parse_id(value, "Job")


def _governing(job_memory: str | None) -> Resource:
    return Resource.of_memory(job_memory) if job_memory is not None else Resource.system()


async def may_see_internals(info: Info, memory: str | None) -> bool:
    """Whether the caller may see dedupe keys of jobs of ``memory`` (None: memory-less)."""
    return await info.context.may(Action.ADMIN, _governing(memory))


async def shows_internals(info: Info, memory: str | None, jobs: Iterable[JobModel]) -> bool:
    """:func:`may_see_internals`, asked (and recorded) only when one of ``jobs``, all of
    ``memory``, has a key to show."""
    if all(job.dedupe_key is None for job in jobs):
        return False
    return await may_see_internals(info, memory)


def without_internals(event: bus.Event) -> bus.Event:
    """A job event as a reader who may not see dedupe keys receives it."""
    if event.payload.get("dedupeKey") is None:
        return event
    return replace(event, payload={**event.payload, "dedupeKey": None})


async def _shown(info: Info, job: JobModel) -> Job:
    return Job.from_model(job, internals=await shows_internals(info, job.memory, [job]))


async def visible_job(info: Info, job_id: UUID, action: Action = Action.READ) -> JobModel:
    """The job if the caller may see it (NOT_FOUND otherwise) and may do ``action``."""
    job = await info.context.services.jobs.get(job_id)
    if job is None or not await info.context.may(Action.READ, _governing(job.memory)):
        raise NotFound(f"No job {job_id}", id=str(job_id))
    if action is not Action.READ:
        await info.context.authorize(action, _governing(job.memory))
    return job


@strawberry.type
class JobQuery:
    @strawberry.field(description="A job by id; null if absent or not visible to you")
    async def job(self, info: Info, id: strawberry.ID) -> Job | None:
        try:
            return await _shown(info, await visible_job(info, _job_id(id), Action.READ))
        except NotFound:
            return None

    @strawberry.field(description="Jobs of the request's memory, newest first")
    async def jobs(
        self,
        info: Info,
        filter: JobFilter | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> JobConnection:
        if filter and filter.memory:
            memory = await info.context.enter(filter.memory)
        else:
            memory = await info.context.memory()
        given = filter or JobFilter()
        page = await info.context.services.jobs.list(
            JobFilterModel(
                status=given.status,
                type=given.type,
                tier=given.tier,
                memory=memory,
                created_after=given.created_after,
                created_before=given.created_before,
            ),
            first=first,
            after=after,
        )
        internals = await shows_internals(info, memory, (job for _, job in page.items))
        return JobConnection(
            edges=[
                JobEdge(cursor=c, node=Job.from_model(j, internals=internals))
                for c, j in page.items
            ],
            page_info=PageInfo.of(page),
        )

    @strawberry.field(description="Counts across every memory (system readers)")
    async def job_stats(self, info: Info) -> JobStats:
        await info.context.authorize(Action.READ, Resource.system())
        stats = await info.context.services.jobs.stats()
        return JobStats(
            by_status=[JobCount(key=k, count=v) for k, v in sorted(stats.by_status.items())],
            pending_by_tier=[
                JobCount(key=k, count=v) for k, v in sorted(stats.by_tier_pending.items())
            ],
            oldest_pending_at=stats.oldest_pending_at,
        )


@strawberry.type
class JobMutation:
    @strawberry.mutation(description="Purge soft-deleted notes in the background, as one job")
    async def purge_notes(self, info: Info, ids: list[strawberry.ID]) -> Job:
        if not ids or len(ids) > MAX_PURGE_BATCH:
            raise BadUserInput(f"Give 1 to {MAX_PURGE_BATCH} note ids", field="ids")
        memory = await info.context.memory()
        note_ids = [parse_note_id(i) for i in ids]
        for note_id in note_ids:
            # Each note: readable (else NOT_FOUND) and deletable by the caller, now.
            _, note = await info.context.readable_note(note_id)
            await info.context.authorize(
                Action.DELETE, Resource.of_note(memory, note.project, note.skill)
            )
        spec = JobSpec(
            type="PurgeNote",
            memory=memory,
            payload={"note_ids": sorted({str(i) for i in note_ids})},
            requested_by=info.context.caller.sub,
        )
        job, _ = await info.context.services.jobs.submit(spec)
        await info.context.services.wakeups.dispatch(job)
        return await _shown(info, job)

    @strawberry.mutation
    async def cancel_job(self, info: Info, id: strawberry.ID) -> Job:
        job = await visible_job(info, _job_id(id), Action.WRITE)
        cancelled = await info.context.services.jobs.cancel(job.id, actor=info.context.caller.sub)
        return await _shown(info, cancelled)

    @strawberry.mutation(description="Run a failed or cancelled job again")
    async def retry_job(self, info: Info, id: strawberry.ID) -> Job:
        job = await visible_job(info, _job_id(id), Action.WRITE)
        retried = await info.context.services.jobs.retry(job.id, actor=info.context.caller.sub)
        await info.context.services.wakeups.dispatch(retried)
        return await _shown(info, retried)

    @strawberry.mutation(description="Stop starting jobs of a memory (null: every memory)")
    async def pause_jobs(self, info: Info, memory: str | None = None) -> bool:
        if memory is not None:
            await info.context.enter(memory)
        await info.context.authorize(Action.ADMIN, _governing(memory))
        await info.context.services.jobs.pause(memory, actor=info.context.caller.sub)
        return True

    @strawberry.mutation(description="Start jobs of a memory again (null: every memory)")
    async def resume_jobs(self, info: Info, memory: str | None = None) -> bool:
        if memory is not None:
            await info.context.enter(memory)
        await info.context.authorize(Action.ADMIN, _governing(memory))
        await info.context.services.jobs.resume(memory)
        # Jobs held back while paused have had their messages consumed: nudge them now.
        await info.context.services.wakeups.redispatch_due()
        return True
