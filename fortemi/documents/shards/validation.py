"""The checks an import makes before it writes anything.

Pass one reads the whole archive (:class:`~.archive.ShardReader`: member names, sizes,
checksums, counts, row shapes) and keeps each row's key and the keys its references name;
then, in a read-only look at the memory, it checks that every column exists there, that
every reference names a row of the shard or of the memory (``shard_dangling_reference``)
and counts the rows whose key the memory already holds (the conflicts).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fortemi.documents.shards.archive import Limits, ShardReader
from fortemi.documents.shards.components import table_named
from fortemi.documents.shards.manifest import Manifest, refused
from fortemi.documents.shards.repository import conflicts, dangling, stored_columns
from fortemi.platform.database import Connection, Database

__all__ = ["Plan", "validate"]

Key = tuple[Any, ...]


@dataclass
class Plan:
    """What pass one found: the manifest, incoming rows and conflicts per table."""

    manifest: Manifest
    incoming: dict[str, int] = field(default_factory=dict)
    conflicts: dict[str, int] = field(default_factory=dict)


def _key(values: dict[str, Any], columns: tuple[str, ...]) -> Key | None:
    key = tuple(values.get(c) for c in columns)
    return None if any(v is None for v in key) else key


async def validate(db: Database, memory: str, path: Path, limits: Limits) -> Plan:
    # Reading, hashing and parsing the archive is CPU and file work: off the event loop.
    manifest, keys, wanted = await asyncio.to_thread(_scan, path, limits)
    plan = Plan(manifest, incoming={t: len(k) for t, k in keys.items()})
    async with db.memory_transaction(memory) as conn:
        await _check_columns(conn, manifest)
        for (target, columns), names in wanted.items():
            missing = await dangling(conn, target, columns, names - keys[target])
            if missing is not None:
                named = ", ".join(str(missing[c]) for c in columns)
                raise refused(
                    "shard_dangling_reference",
                    f"The shard refers to {target} {named}, which is neither in the shard "
                    "nor in the memory",
                )
        for name, table_keys in keys.items():
            table = table_named(name)
            if table is not None:
                plan.conflicts[name] = await conflicts(conn, table, table_keys)
    return plan


Wanted = dict[tuple[str, tuple[str, ...]], set[Key]]


def _scan(path: Path, limits: Limits) -> tuple[Manifest, dict[str, set[Key]], Wanted]:
    """Pass one over the archive: every row's key, and the keys its references name."""
    keys: dict[str, set[Key]] = defaultdict(set)
    wanted: Wanted = defaultdict(set)
    with ShardReader(path, limits) as reader:
        manifest = reader.manifest
        if manifest is None:  # pragma: no cover - __enter__ reads it or raises
            raise RuntimeError("no manifest")
        for row in reader.rows():
            table = table_named(row.table)
            if table is None:  # pragma: no cover - the reader checks table names
                raise RuntimeError(row.table)
            own = _key(row.values, table.key)
            if own is None or own in keys[table.name]:
                raise refused(
                    "shard_bad_row",
                    f"A {table.name} row has no key, or its key appears twice in the shard",
                )
            keys[table.name].add(own)
            for ref in table.refs:
                named = _key(row.values, ref.columns)
                if named is not None:
                    wanted[(ref.table, ref.target)].add(named)
    return manifest, keys, wanted


async def _check_columns(conn: Connection, manifest: Manifest) -> None:
    for component in manifest.components:
        for entry in component.tables:
            present = set(await stored_columns(conn, entry.name))
            unknown = sorted(set(entry.columns) - present)
            if unknown:
                raise refused(
                    "shard_unknown_column",
                    f"{entry.name} has no column {', '.join(unknown)} in this Fortemi: "
                    "upgrade it to import this shard",
                )
