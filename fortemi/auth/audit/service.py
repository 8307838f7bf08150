"""The audit service: what auditors ask of the log, and its live feed.

The log itself is written by the :class:`~fortemi.auth.audit.writer.AuditWriter`; this
service answers the auditors' questions (pages, counts, chain verification) and carries
committed entries to live subscribers over Redis pub/sub. PostgreSQL stays the record:
the feed is best effort, and a subscriber that needs every entry pages the log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import Any

import redis.asyncio as redis

from fortemi.auth.audit.export import to_row
from fortemi.auth.audit.keys import AuditKeyring
from fortemi.auth.audit.models import (
    AuditBucket,
    AuditEntry,
    AuditFilter,
    AuditPage,
    Bucket,
    GroupBy,
    Verification,
)
from fortemi.auth.audit.repository import list_entries, stats
from fortemi.auth.audit.verify import verify
from fortemi.auth.audit.writer import AUDIT_CHANNEL
from fortemi.platform.database import Database

__all__ = ["AuditService"]


class AuditService:
    """Reads the audit log and relays committed entries (as exported rows) to subscribers."""

    def __init__(self, db: Database, keyring: AuditKeyring, redis_client: redis.Redis) -> None:
        self._db = db
        self._keyring = keyring
        self._redis = redis_client

    async def page(
        self, filter: AuditFilter | None, *, first: int | None, after: str | None
    ) -> AuditPage:
        """Entries newest first, ``first`` of them after the cursor ``after``."""
        return await list_entries(self._db, filter, first=first, after=after)

    async def stats(
        self, filter: AuditFilter | None, *, bucket: Bucket, group_by: Sequence[GroupBy]
    ) -> list[AuditBucket]:
        """Decision counts per time bucket and grouping."""
        return await stats(self._db, filter, bucket=bucket, group_by=list(group_by))

    async def verify(self, *, since: datetime | None = None) -> Verification:
        """Re-check every hash chain under the keyring; the first broken row if any."""
        return await verify(self._db, self._keyring, since=since)

    async def publish(self, entries: Sequence[AuditEntry]) -> None:
        """Announce committed ``entries`` to live subscribers (the writer's
        ``on_committed``); the log is already the record.

        One round trip for the whole batch (a pipeline, in order, not a transaction):
        every request writes a few entries, and a publish each was a round trip each."""
        if not entries:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for entry in entries:
                pipe.publish(AUDIT_CHANNEL, json.dumps(to_row(entry)))
            await pipe.execute()

    async def subscribe(self) -> AsyncGenerator[dict[str, Any], None]:
        """Entries as they are committed from now on, as exported rows; runs until closed
        (``aclose()``), which unsubscribes."""
        pubsub = self._redis.pubsub()
        await pubsub.subscribe(AUDIT_CHANNEL)
        try:
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    yield json.loads(message["data"])
        finally:
            await pubsub.unsubscribe(AUDIT_CHANNEL)
            await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py is untyped here
