"""The ``EmbeddingBackfill`` job: filling a new embedding set with every note.

The ``Embedding`` job enqueues it (:func:`~fortemi.retrieval.indexing.backfill_spec`,
deduplicated per memory and set) when it creates a memory's second or later set, or finds
the configured set behind while another one answers. It enqueues an ``Embedding`` job per
note, each deduplicated with any already waiting, so it never runs a note twice at once.
"""

from __future__ import annotations

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobType, Tier
from fortemi.retrieval.indexing import EMBEDDING_BACKFILL, embedding_spec
from fortemi.retrieval.repository import RetrievalRepository

__all__ = ["embedding_backfill_type"]


class _BackfillHandler:
    """Runs an ``EmbeddingBackfill`` job: an ``Embedding`` job for every live note that
    the set does not hold whole (deduplicated with those already waiting). Running it
    again enqueues only what is still missing."""

    def __init__(self, db: Database, tier: Tier) -> None:
        self._db = db
        self._tier = tier
        self._chunks = RetrievalRepository()

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        set_id = context.job.payload.get("set_id")
        if memory is None:
            return JobOutcome.failure("memory_required")
        if isinstance(set_id, bool) or not isinstance(set_id, int):
            return JobOutcome.failure("invalid_payload")
        async with self._db.memory_transaction(memory) as conn:
            missing = await self._chunks.notes_missing(conn, set_id)
        for done, note_id in enumerate(missing, start=1):
            await context.enqueue(embedding_spec(memory, note_id, self._tier))
            if done % 500 == 0:
                await context.report_progress(
                    done * 100 // len(missing), f"{done} of {len(missing)} notes"
                )
        return JobOutcome.success({"notes": len(missing)})


def embedding_backfill_type(db: Database, *, tier: Tier) -> JobType:
    """The ``EmbeddingBackfill`` job type; its ``Embedding`` jobs run on ``tier``."""
    return JobType(
        name=EMBEDDING_BACKFILL, tier=Tier.CPU, priority=5, handler=_BackfillHandler(db, tier)
    )
