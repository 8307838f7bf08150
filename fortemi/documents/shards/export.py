"""Writing a shard: one consistent snapshot of a memory, streamed to a gzip tar.

Every component is written to a spooled temporary file (kept in memory up to
:data:`SPOOL_BYTES`, then on disk) while its SHA-256 and row counts are taken; then the
manifest, which needs them, goes first into the archive and the components follow. Rows
come from the server as JSON text (``to_jsonb``) through a cursor, so neither the memory
nor any one table is ever held whole in this process.

gzip rather than zstd: the standard library writes and reads it (no native dependency
for a format meant to outlive this code), every ``tar`` opens it, and pg_dump's default
compression is the same zlib, which keeps the benchmark's ratio about the format.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from fortemi.documents.shards.components import COMPONENTS, Component
from fortemi.documents.shards.manifest import (
    FORMAT,
    MANIFEST_NAME,
    READER_VERSION,
    SHARD_VERSION,
    ComponentEntry,
    LossEntry,
    Manifest,
    TableEntry,
)
from fortemi.documents.shards.repository import count_rows, row_texts, stored_columns
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput

__all__ = ["ExportOptions", "export_shard"]

SPOOL_BYTES = 16 * 1024 * 1024
_COMPRESS_LEVEL = 6  # zlib's default, as pg_dump's


@dataclass(frozen=True, slots=True)
class ExportOptions:
    profile: str = "full-v1"
    vectors: bool = True  # full-v1: chunks and vectors (recomputable) travel too
    producer: str = "fortemi"


def _carried(component: Component, options: ExportOptions) -> bool:
    if options.profile not in component.profiles:
        return False
    return component.optional != "vectors" or options.vectors


async def export_shard(
    db: Database, memory: str, sink: IO[bytes], options: ExportOptions
) -> Manifest:
    """Write memory ``memory`` as a shard to ``sink``; the manifest written is returned.

    One REPEATABLE READ transaction: every component sees the same moment.
    """
    if options.profile not in ("core-v1", "full-v1"):
        raise BadUserInput(
            f"Unknown shard profile {options.profile!r}: use core-v1 or full-v1",
            reason="shard_bad_profile",
        )
    spools: list[tuple[ComponentEntry, IO[bytes]]] = []
    loss: list[LossEntry] = []
    try:
        async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
            for component in COMPONENTS:
                if _carried(component, options):
                    spools.append(await _spool(conn, component, options.profile))
                    loss.extend(await _column_losses(conn, component, options.profile))
                else:
                    loss.extend(await _component_losses(conn, component, options))
        manifest = Manifest(
            format=FORMAT,
            shard_version=SHARD_VERSION,
            min_reader_version=READER_VERSION,
            producer=options.producer,
            profile=options.profile,
            created_at=datetime.now(UTC),
            memory=memory,
            options={"vectors": options.vectors},
            components=[entry for entry, _ in spools],
            loss=loss,
        )
        # Compression is CPU work: off the event loop.
        await asyncio.to_thread(_write_tar, sink, manifest, spools)
        return manifest
    finally:
        for _, spool in spools:
            spool.close()


async def _spool(
    conn: Connection, component: Component, profile: str
) -> tuple[ComponentEntry, IO[bytes]]:
    # Closed by export_shard once the archive is written.
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    digest = hashlib.sha256()
    tables: list[TableEntry] = []
    size = 0
    for table in component.tables:
        columns = await stored_columns(conn, table.name)
        dropped = [c for loss in table.dropped(profile) for c in loss.columns]
        kept = [c for c in columns if c not in dropped]
        count = 0
        prefix = b'{"table":' + json.dumps(table.name).encode() + b',"row":'
        async for text in row_texts(conn, table, kept):
            line = prefix + text.encode() + b"}\n"
            spool.write(line)
            digest.update(line)
            size += len(line)
            count += 1
        tables.append(TableEntry(name=table.name, count=count, columns=kept))
    spool.seek(0)
    entry = ComponentEntry(
        name=component.name,
        path=component.path,
        sha256=digest.hexdigest(),
        bytes=size,
        count=sum(t.count for t in tables),
        tables=tables,
    )
    return entry, spool


async def _column_losses(conn: Connection, component: Component, profile: str) -> list[LossEntry]:
    return [
        LossEntry(
            code=loss.code,
            component=component.name,
            table=table.name,
            rows=await count_rows(conn, table.name, loss.when),
            description=loss.description,
        )
        for table in component.tables
        for loss in table.dropped(profile)
    ]


async def _component_losses(
    conn: Connection, component: Component, options: ExportOptions
) -> list[LossEntry]:
    code = component.loss_code
    if options.profile in component.profiles and component.optional == "vectors":
        code = "vectors-omitted"
    return [
        LossEntry(
            code=code,
            component=component.name,
            table=table.name,
            rows=await count_rows(conn, table.name),
            description=f"{component.description}: not carried by {options.profile}"
            + (" without vectors" if code == "vectors-omitted" else ""),
        )
        for table in component.tables
    ]


def _write_tar(
    sink: IO[bytes], manifest: Manifest, spools: list[tuple[ComponentEntry, IO[bytes]]]
) -> None:
    mtime = int(manifest.created_at.timestamp())
    with (
        gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=_COMPRESS_LEVEL, mtime=mtime) as gz,
        tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        data = manifest.to_json()
        tar.addfile(_member(MANIFEST_NAME, len(data), mtime), io.BytesIO(data))
        for entry, spool in spools:
            tar.addfile(_member(entry.path, entry.bytes, mtime), spool)


def _member(name: str, size: int, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, 0o644
    return info
