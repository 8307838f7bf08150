"""The audit writer: group commit of decisions into this process's hash chain.

On ``start()`` the writer registers its segment in the chained segment registry, under
the keyring's current key (:mod:`.chain`); every row it writes is hashed with that key.
Callers enqueue records and wait; one background task takes everything queued (whole
calls, up to ``max_batch`` records), numbers and chains them (:mod:`.chain`), and writes
the batch and the segment's new head in ONE statement (so in one transaction), then wakes
the callers. While a batch is in flight the next one gathers, so under load each request
pays for about one round trip, however many requests arrive together.

Contract (the :class:`~fortemi.auth.audit.models.AuditSink` one, made exact):

* ``record()`` returns only once its records are committed; nothing is ever dropped.
* The records of one call are stored in order, at consecutive ``seq`` numbers.
* Fail closed: if a batch cannot be committed, every caller in it gets
  :class:`~fortemi.platform.errors.Unavailable` and the chain head stays at the last
  committed row; the next batch re-reads that head from the database (a commit whose
  outcome was lost is then picked up rather than forked).
* The head is advanced by compare-and-set, so a second process mistakenly given the same
  segment can never fork the chain: its batches fail (and then resume from the real head).
* ``on_committed`` gets each committed batch, in commit order, from a separate task:
  a slow or failing subscriber (a Redis publish) never delays or fails the audit write.
  Its errors are logged; if it falls ``notify_backlog`` batches behind, notices are
  dropped with a warning (PostgreSQL stays the record; the live feed is best effort).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import os
import secrets
import socket
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

from fortemi.auth.audit import registry, repository
from fortemi.auth.audit.chain import ROOT_LINK, chain_hash, registration_link, stored_form
from fortemi.auth.audit.keys import AuditKeyring
from fortemi.auth.audit.models import AuditEntry, AuditRecord, Registration
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Unavailable
from fortemi.platform.metrics import AUDIT_WRITE_SECONDS

__all__ = ["AUDIT_CHANNEL", "REFUSED", "AuditWriter", "OnCommitted", "default_segment"]

# Where committed entries are announced (one JSON row per message) for auditEvents
# subscriptions; the log itself is the record.
AUDIT_CHANNEL = "fortemi:audit-events"

log = logging.getLogger(__name__)

REFUSED = "The audit log is unavailable; the request was refused"
OnCommitted = Callable[[Sequence[AuditEntry]], Awaitable[None]]


def default_segment() -> str:
    """A segment name unique to this writer: host, process id and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"


class _HeadMoved(RuntimeError):
    """The segment's head is not where this writer left it."""


@dataclass(slots=True)
class _Call:
    records: list[AuditRecord]
    done: asyncio.Future[list[AuditEntry]]


class AuditWriter:
    """The :class:`AuditSink` of one process: ``await start()``, ``record()``, ``close()``."""

    def __init__(
        self,
        db: Database,
        *,
        keyring: AuditKeyring,
        segment: str | None = None,
        max_batch: int = 500,
        on_committed: OnCommitted | None = None,
        notify_backlog: int = 1000,
    ) -> None:
        if max_batch < 1 or notify_backlog < 1:
            raise ValueError("max_batch and notify_backlog must be positive")
        self._db = db
        self.keyring = keyring
        self._key = keyring.current
        self.segment = segment if segment is not None else default_segment()
        self._max_batch = max_batch
        self._on_committed = on_committed
        self._pending: deque[_Call] = deque()
        self._wake = asyncio.Event()
        self._head: tuple[int, str] | None = None  # None: re-read it before the next batch
        self._task: asyncio.Task[None] | None = None
        self._notices: asyncio.Queue[list[AuditEntry] | None] = asyncio.Queue(notify_backlog)
        self._notifier: asyncio.Task[None] | None = None
        self._notifier_stopping = False
        self._closing = False

    @property
    def head(self) -> tuple[int, str] | None:
        """(last_seq, last_hash) of the last batch this writer committed; None if unknown."""
        return self._head

    async def start(self) -> None:
        """Register the segment (or resume it, if it exists) and start the writer task.

        A new segment is chained to the registration before it and pins that segment's
        head (:mod:`.chain`). Resuming a segment needs the key it was chained under.
        """
        if self._task is not None:
            raise RuntimeError("AuditWriter.start() was already awaited")
        async with self._db.connection() as conn:
            async with conn.transaction():
                await registry.lock_registry(conn)
                exists, kid = await registry.registered_key(conn, self.segment)
                if not exists:
                    await self._register(conn)
                else:
                    self._key = self._resumed_key(kid)
            found = await repository.head(conn, self.segment)
        if found is None:  # just inserted, unless someone deleted it in between
            raise _HeadMoved(f"segment {self.segment} vanished while it was registered")
        self._head = found
        self._task = asyncio.create_task(self._run(), name=f"audit-writer {self.segment}")
        if self._on_committed is not None:
            self._notifier = asyncio.create_task(
                self._notify(self._on_committed), name=f"audit-notifier {self.segment}"
            )

    async def _register(self, conn: Connection) -> None:
        last = await registry.last_registration(conn)
        if last is None:
            # The first keyed segment anchors every segment written before keyed chaining.
            ordinal, prev_link = 1, ROOT_LINK
            pins = tuple(await registry.unkeyed_heads(conn))
        else:
            ordinal, prev_link = last[0] + 1, last[1]
            pins = (last[2],)
        unlinked = Registration(
            ordinal=ordinal,
            segment=self.segment,
            key_id=self.keyring.current_id,
            started_at=dt.datetime.now(dt.UTC),
            pins=tuple(sorted(pins)),
            prev_link=prev_link,
            link="",
        )
        link = registration_link(self._key, prev_link, unlinked)
        await registry.register(
            conn,
            dataclasses.replace(unlinked, link=link),
            host=socket.gethostname(),
            pid=os.getpid(),
        )

    def _resumed_key(self, kid: str | None) -> bytes:
        key = None if kid is None else self.keyring.get(kid)
        if key is None:
            raise ValueError(
                f"audit segment {self.segment} is chained under key {kid or '(none: unkeyed)'}, "
                "which the keyring does not hold; start a new segment"
            )
        return key

    async def close(self) -> None:
        """Refuse new records, commit (or refuse) everything queued, then stop.

        Returns once the queue is written and ``on_committed`` has seen every batch; safe to
        call more than once, or concurrently.
        """
        if self._task is None:
            return
        self._closing = True
        self._wake.set()
        await self._task
        if self._notifier is not None:
            if not self._notifier_stopping:
                self._notifier_stopping = True
                await self._notices.put(None)
            await self._notifier

    async def __aenter__(self) -> AuditWriter:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def record(self, records: Sequence[AuditRecord]) -> None:
        """Durably store ``records`` in order, or raise ``Unavailable``; never drop one."""
        await self.append(records)

    async def append(self, records: Sequence[AuditRecord]) -> list[AuditEntry]:
        """:meth:`record`, returning the stored entries (ids, seq numbers and hashes).

        Raises ``ValueError``/``BadUserInput`` before queueing when a record cannot be
        stored faithfully (see :func:`~fortemi.auth.audit.chain.stored_form`).
        """
        if self._task is None:
            raise RuntimeError("AuditWriter.start() must be awaited before record()")
        if self._closing:
            raise Unavailable(REFUSED)
        prepared = [stored_form(record) for record in records]
        if not prepared:
            return []
        call = _Call(prepared, asyncio.get_running_loop().create_future())
        self._pending.append(call)
        self._wake.set()
        # A caller cancelled here still has its records written: the decision was made.
        return await call.done

    # -- the writer task ----------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                if not self._pending:
                    if self._closing:
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self._commit(self._take())
        except BaseException as exc:
            # Only cancellation gets here (the event loop is going away): nobody may be
            # left waiting for a write that will never happen.
            self._closing = True
            self._refuse(list(self._pending), exc)
            self._pending.clear()
            raise

    def _take(self) -> list[_Call]:
        """Whole calls, up to ``max_batch`` records; a larger call goes alone."""
        batch = [self._pending.popleft()]
        size = len(batch[0].records)
        while self._pending and size + len(self._pending[0].records) <= self._max_batch:
            call = self._pending.popleft()
            batch.append(call)
            size += len(call.records)
        return batch

    async def _commit(self, batch: list[_Call]) -> None:
        records = [record for call in batch for record in call.records]
        try:
            with AUDIT_WRITE_SECONDS.time():
                entries = await self._insert(records)
        except BaseException as exc:
            # Whatever went wrong, the head is no longer known for sure: re-read it later.
            self._head = None
            self._refuse(batch, exc)
            if not isinstance(exc, Exception):
                raise  # cancellation of the writer task itself
            log.error(
                "audit segment %s: a batch of %d records was not committed; %d requests refused",
                self.segment,
                len(records),
                len(batch),
                exc_info=exc,
            )
            return
        start = 0
        for call in batch:
            end = start + len(call.records)
            if not call.done.done():
                call.done.set_result(entries[start:end])
            start = end
        if self._notifier is not None:
            try:
                self._notices.put_nowait(entries)
            except asyncio.QueueFull:
                log.warning(
                    "audit segment %s: on_committed is behind; %d entries not announced",
                    self.segment,
                    len(entries),
                )

    @staticmethod
    def _refuse(calls: list[_Call], cause: BaseException) -> None:
        for call in calls:
            if not call.done.done():
                refused = Unavailable(REFUSED)
                refused.__cause__ = cause
                call.done.set_exception(refused)

    async def _insert(self, records: list[AuditRecord]) -> list[AuditEntry]:
        head = self._head
        if head is None:
            async with self._db.connection() as conn:
                head = await repository.head(conn, self.segment)
            if head is None:
                raise _HeadMoved(f"segment {self.segment} has no head row")
        first_seq, prev = head[0] + 1, head[1]
        links: list[tuple[str, str]] = []
        for seq, record in enumerate(records, first_seq):
            current = chain_hash(self._key, prev, self.segment, seq, record)
            links.append((prev, current))
            prev = current
        last_seq = head[0] + len(records)
        # One self-committing statement: no session reset needed on release.
        async with self._db.statements() as conn:
            ids = await repository.insert_batch(conn, self.segment, head, records, links)
        if len(ids) != len(records):
            raise _HeadMoved(
                f"segment {self.segment}: the head moved from seq {head[0]}; "
                "is another process writing this segment?"
            )
        self._head = (last_seq, prev)
        return [
            AuditEntry(ids[seq], record, self.segment, seq, prev_hash, current)
            for seq, record, (prev_hash, current) in zip(
                range(first_seq, last_seq + 1), records, links, strict=True
            )
        ]

    async def _notify(self, on_committed: OnCommitted) -> None:
        while (entries := await self._notices.get()) is not None:
            try:
                await on_committed(entries)
            except Exception:
                log.exception("audit segment %s: on_committed failed", self.segment)
