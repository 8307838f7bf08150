"""Pass two of an import: every row written in one transaction, after validation passed.

Ids, nulls, tombstones and timestamps are written as the shard has them (never
regenerated, defaulted or touched). ``on_conflict``: ``error`` (the default: validation
refused any conflict), ``skip`` (keep the memory's row), ``replace`` (take the shard's),
``merge`` (take the shard's only where it is newer by the table's ``newer`` column).
History rows are never changed, and under replace or merge a row the memory deleted stays
deleted unless the shard's is deleted too: an import never revives a tombstone.

Attachment bytes are published to the target memory's blob store after the rows are
written and before the transaction commits, so a committed blob row always has its bytes.
If the import fails after that, its rows are rolled back and the bytes it published are
recorded as orphan ``blob`` rows (no attachment names them) in a transaction of their own,
which the attachments' orphan sweep then removes, rows and bytes, as any other. Should
even that write fail (the database gone), the bytes stay unnamed: harmless (never served,
every download goes through an attachment row; reused by a later upload of the same
bytes) and logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg

from fortemi.documents.shards.archive import Limits, ShardReader
from fortemi.documents.shards.blobs import BlobBytes, Readable, stage_blob
from fortemi.documents.shards.components import table_named
from fortemi.documents.shards.manifest import refused
from fortemi.documents.shards.repository import (
    advance_identity,
    insert_rows,
    lock_blob,
    record_orphans,
)
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Conflict

__all__ = ["POLICIES", "apply_shard"]

log = logging.getLogger(__name__)

POLICIES = ("error", "skip", "replace", "merge")
_BATCH = 1000


AfterImport = Callable[[Connection], Awaitable[object]]


async def apply_shard(
    db: Database,
    memory: str,
    path: Path,
    limits: Limits,
    policy: str,
    blobs: BlobBytes,
    after: Sequence[AfterImport] = (),
) -> dict[str, int]:
    """Write the shard's rows; the rows written (inserted or updated) per table. ``after``:
    what other features derive from the rows (indexes), run in the same transaction."""
    published: list[tuple[str, int]] = []
    try:
        return await _apply(db, memory, path, limits, policy, blobs, after, published)
    except BaseException:
        if published:
            await _orphaned(db, memory, published)
        raise


async def _apply(
    db: Database,
    memory: str,
    path: Path,
    limits: Limits,
    policy: str,
    blobs: BlobBytes,
    after: Sequence[AfterImport],
    published: list[tuple[str, int]],
) -> dict[str, int]:
    written: dict[str, int] = {}
    async with db.memory_transaction(memory, subject=f"Memory {memory}") as conn:
        with ShardReader(path, limits) as reader:
            manifest = reader.manifest
            if manifest is None:  # pragma: no cover - __enter__ reads it or raises
                raise RuntimeError("no manifest")
            columns = {t.name: t.columns for c in manifest.components for t in c.tables}
            batch: list[dict[str, Any]] = []
            current: str | None = None
            digests: set[str] = set()
            for row in reader.rows():
                if row.table == "blob":
                    digests.add(str(row.values["digest"]))
                if row.table != current or len(batch) >= _BATCH:
                    if current is not None:
                        await _write(conn, current, columns[current], batch, policy, written)
                    current, batch = row.table, []
                batch.append(row.values)
            if current is not None:
                await _write(conn, current, columns[current], batch, policy, written)
            await _publish_blobs(conn, reader, memory, blobs, digests, published)
        for name in written:
            table = table_named(name)
            if table is not None and table.identity:
                await advance_identity(conn, table.name, table.identity)
        for hook in after:
            await hook(conn)
    return written


async def _orphaned(db: Database, memory: str, published: list[tuple[str, int]]) -> None:
    try:
        async with db.memory_transaction(memory) as conn:
            await record_orphans(conn, published)
    except Exception:
        log.exception(
            "a failed import into %s left %d blobs in the store that no row names",
            memory,
            len(published),
        )


async def _publish_blobs(
    conn: Connection,
    reader: ShardReader,
    memory: str,
    blobs: BlobBytes,
    digests: set[str],
    published: list[tuple[str, int]],
) -> None:
    """The bytes of every blob row of the shard in the memory's store before the commit:
    those the shard carries written (unless held already; ``published`` lists the
    others), the rest checked again."""
    for blob in reader.blobs():
        digests.discard(blob.digest)
        await lock_blob(conn, blob.digest)
        if await blobs.store.exists(memory, blob.digest):
            # Content-addressed: the bytes held are these bytes. Read past them.
            await asyncio.to_thread(_skip, blob.file)
            continue
        # Hashed again while staged: the file may have changed since validation.
        staged = await asyncio.to_thread(stage_blob, blob.file, blobs.staging, blob.digest)
        published.append((blob.digest, blob.size))
        await blobs.store.put(memory, blob.digest, staged)
    for digest in sorted(digests):
        # Found in the store by validation; locked now, so no sweep removes them any more.
        await lock_blob(conn, digest)
        if not await blobs.store.exists(memory, digest):
            raise refused(
                "shard_missing_blob",
                f"The bytes of attachment blob {digest[:12]} left memory {memory}'s store "
                "during the import: import again",
            )


def _skip(source: Readable) -> None:
    while source.read(1024 * 1024):
        pass


async def _write(
    conn: Connection,
    name: str,
    columns: list[str],
    batch: list[dict[str, Any]],
    policy: str,
    written: dict[str, int],
) -> None:
    table = table_named(name)
    if table is None or not batch:
        return
    try:
        count = await insert_rows(conn, table, columns, policy, batch)
    except asyncpg.UniqueViolationError as exc:
        raise Conflict(
            f"A {name} row of the shard collides with one of the memory "
            f"({exc.constraint_name}); choose --on-conflict skip, replace or merge",
            reason="shard_conflict",
        ) from exc
    except (asyncpg.IntegrityConstraintViolationError, asyncpg.DataError) as exc:
        raise refused(
            "shard_bad_row", f"A {name} row of the shard is refused by the memory: {exc}"
        ) from exc
    written[name] = written.get(name, 0) + count
