"""Waiting on a job from a tool: its progress as MCP progress notifications, then its end.

``job_status`` with ``waitSeconds`` follows the job's events on the bus (the ones GraphQL's
``jobEvents`` reads) and returns once the job has ended or the wait is over, reading the
job again through GraphQL each time, so every answer is decided and audited as the first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from fortemi.platform.events import EventBus

__all__ = ["ENDED", "MAX_WAIT_SECONDS", "RECHECK_SECONDS", "follow_job", "job_ended"]

ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED"})
_ENDING_EVENTS = frozenset({"job.completed", "job.failed", "job.cancelled"})
MAX_WAIT_SECONDS = 120
# The job is read again at least this often: an end announced between the read and the
# subscription (or an event lost with Redis) delays the answer by this much at most.
RECHECK_SECONDS = 5.0

Progress = Callable[[float, str | None], Awaitable[None]]


def job_ended(data: dict[str, Any] | None) -> bool:
    job = (data or {}).get("job")
    return isinstance(job, dict) and job.get("status") in ENDED


async def follow_job(events: EventBus, job_id: str, seconds: float, progress: Progress) -> None:
    """Until an event says the job ended, or ``seconds`` have passed; each progress event
    on the way is handed to ``progress``."""
    with anyio.move_on_after(seconds):
        async for event in events.subscribe():
            if event.entity_type != "job" or event.entity_id != job_id:
                continue
            if event.type == "job.progress":
                done = event.payload.get("progress")
                message = event.payload.get("progressMessage")
                await progress(
                    float(done) if isinstance(done, int | float) else 0.0,
                    message if isinstance(message, str) else None,
                )
            if event.type in _ENDING_EVENTS:
                return
