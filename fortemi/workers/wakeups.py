"""Waking workers for committed jobs, as one object the API's services are handed."""

from __future__ import annotations

from collections.abc import Sequence

from fortemi.platform.jobs.models import Job
from fortemi.platform.jobs.service import JobService
from fortemi.workers.dispatch import JobDispatcher, dispatch
from fortemi.workers.loops import relay_once

__all__ = ["Wakeups"]


class Wakeups:
    """Sends the wake-ups of jobs already committed; the relay covers a lost message."""

    def __init__(self, jobs: JobService, dispatcher: JobDispatcher) -> None:
        self._jobs = jobs
        self._dispatcher = dispatcher

    async def dispatch(self, job: Job) -> None:
        """Wake a worker for ``job`` (committed already)."""
        await dispatch(self._jobs, self._dispatcher, [job])

    async def dispatch_all(self, jobs: Sequence[Job]) -> None:
        await dispatch(self._jobs, self._dispatcher, jobs)

    async def redispatch_due(self) -> None:
        """Wake workers for every runnable pending job now (after resuming, say)."""
        await relay_once(self._jobs, self._dispatcher, resend_after_seconds=0)
