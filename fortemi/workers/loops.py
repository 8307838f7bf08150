"""Maintenance: the relay (re-send lost wake-ups) and the reaper (expired leases).

Both are idempotent and safe with any number running at once, in any processes: the
service picks rows under ``FOR UPDATE SKIP LOCKED`` (the reaper) or only re-sends
(the relay), and a wake-up sent twice costs one empty claim. Every worker process runs
a :class:`MaintenanceLoop`; so may the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fortemi.platform.jobs.models import JobStatus
from fortemi.platform.jobs.service import JobService
from fortemi.workers.dispatch import JobDispatcher, dispatch

__all__ = ["MaintenanceLoop", "reap_once", "relay_once"]

log = logging.getLogger(__name__)

DEFAULT_RESEND_AFTER_SECONDS = 30.0
_BATCH = 500
# A backlog of lost messages is re-sent in batches within one pass, up to this many.
_MAX_BATCHES = 20


async def relay_once(
    service: JobService,
    dispatcher: JobDispatcher,
    *,
    resend_after_seconds: float = DEFAULT_RESEND_AFTER_SECONDS,
    limit: int = _BATCH,
) -> int:
    """Re-send wake-ups for pending jobs whose message may be lost; how many were sent.

    "May be lost": never sent, or sent more than ``resend_after_seconds`` ago and still
    pending (the service decides which rows those are). Sent ones are marked sent, so the
    next pass skips them until they are overdue again.
    """
    due = await service.due_for_send(resend_after_seconds=resend_after_seconds, limit=limit)
    return await dispatch(service, dispatcher, due)


async def reap_once(service: JobService, dispatcher: JobDispatcher, *, limit: int = _BATCH) -> int:
    """Take back jobs whose lease expired and wake those returned to pending.

    Returns how many jobs were reaped (back to pending, or failed for good when out of
    attempts).
    """
    reaped = await service.reap(limit=limit)
    pending = [job for job in reaped if job.status is JobStatus.PENDING]
    if reaped:
        log.warning(
            "reaped %d job(s) with expired leases; %d back to pending", len(reaped), len(pending)
        )
    await dispatch(service, dispatcher, pending)
    return len(reaped)


class MaintenanceLoop:
    """Runs the reaper and the relay every ``interval_seconds`` until stopped.

    A pass that fails (database or Redis down) is logged and tried again next interval;
    the loop itself only ends through :meth:`stop`.
    """

    def __init__(
        self,
        service: JobService,
        dispatcher: JobDispatcher,
        *,
        interval_seconds: float = 5.0,
        resend_after_seconds: float = DEFAULT_RESEND_AFTER_SECONDS,
    ) -> None:
        if interval_seconds <= 0:
            raise ValueError("interval_seconds must be positive")
        self._service = service
        self._dispatcher = dispatcher
        self._interval = interval_seconds
        self._resend_after = resend_after_seconds
        self._task: asyncio.Task[None] | None = None
        self._resend_all = False

    def start(self) -> None:
        """Start on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="fortemi-jobs-maintenance")

    def request_resend(self) -> None:
        """Re-send every due wake-up on the next pass, not only overdue ones: wake-ups were
        consumed while they could not be handled (the database was unreachable), and
        waiting ``resend_after_seconds`` for them would stall recovery."""
        self._resend_all = True

    async def stop(self) -> None:
        """Stop and wait for the current pass to be abandoned."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run_once(self) -> tuple[int, int]:
        """One pass: reap first (its jobs are dispatched now), then relay the rest.

        Returns (reaped, relayed).
        """
        reaped = await reap_once(self._service, self._dispatcher)
        resend_all, self._resend_all = self._resend_all, False
        relayed = 0
        for _ in range(_MAX_BATCHES):
            try:
                sent = await relay_once(
                    self._service,
                    self._dispatcher,
                    resend_after_seconds=0 if resend_all else self._resend_after,
                    limit=_BATCH,
                )
            except Exception:
                self._resend_all = self._resend_all or resend_all  # still owed
                raise
            relayed += sent
            if sent < _BATCH:
                break
        return reaped, relayed

    async def _run(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("job maintenance pass failed; retrying in %.1fs", self._interval)
                # Wake-ups consumed meanwhile found nothing they could claim.
                self._resend_all = True
            await asyncio.sleep(self._interval)
