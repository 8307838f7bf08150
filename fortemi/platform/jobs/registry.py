"""The job types a process knows: each one's tier, default priority, attempts and handler.

The service consults the registry to refuse unknown types at enqueue time and to fill in
defaults; the runtime consults it to find a claimed job's handler. Registration happens at
start-up, before any job is enqueued or claimed, so the registry needs no lock.

A feature may also register start-up jobs (:meth:`JobRegistry.on_start`): work a worker
enqueues each time it starts, such as a sweep for what earlier processes left undone.
They must carry dedupe keys, since every worker that starts enqueues them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from fortemi.platform.jobs.models import JobSpec, JobType, Tier

__all__ = ["JobRegistry", "StartupJobs"]

StartupJobs = Callable[[], Awaitable[Sequence[JobSpec]]]
"""What a worker enqueues when it starts (each spec with a dedupe key)."""


class JobRegistry:
    """Job types by name. Names are unique: registering one twice is a programming error."""

    def __init__(self) -> None:
        self._types: dict[str, JobType] = {}
        self._startup: list[StartupJobs] = []

    def register(self, job_type: JobType) -> None:
        """Add ``job_type``; ValueError if its name is taken or its defaults are invalid.

        Defaults are checked here, once, so a bad registration fails at start-up rather
        than as a constraint violation on the first enqueue.
        """
        if not job_type.name or len(job_type.name) > 200:
            raise ValueError(f"job type name must be 1..200 characters: {job_type.name!r}")
        if job_type.name in self._types:
            raise ValueError(f"job type {job_type.name!r} is already registered")
        if not isinstance(job_type.tier, Tier):
            raise ValueError(f"job type {job_type.name!r}: tier must be a Tier")
        if isinstance(job_type.priority, bool) or not 1 <= job_type.priority <= 10:
            raise ValueError(f"job type {job_type.name!r}: priority must be 1..10")
        if isinstance(job_type.max_attempts, bool) or job_type.max_attempts < 1:
            raise ValueError(f"job type {job_type.name!r}: max_attempts must be at least 1")
        self._types[job_type.name] = job_type

    def get(self, name: str) -> JobType:
        """The type named ``name``; KeyError if none is registered."""
        try:
            return self._types[name]
        except KeyError:
            raise KeyError(f"no job type {name!r} is registered") from None

    def __contains__(self, name: str) -> bool:
        return name in self._types

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._types)

    def on_start(self, jobs: StartupJobs) -> None:
        """Have every worker that starts enqueue what ``jobs()`` returns."""
        self._startup.append(jobs)

    async def startup_jobs(self) -> list[JobSpec]:
        """The start-up jobs of every feature, in registration order; a spec without a
        dedupe key is a ValueError (each worker's start would add another job)."""
        specs = [spec for jobs in self._startup for spec in await jobs()]
        for spec in specs:
            if spec.dedupe_key is None:
                raise ValueError(f"start-up job {spec.type!r} needs a dedupe key")
        return specs
