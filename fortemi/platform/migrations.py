"""Versioned SQL migrations for the shared schema and for each memory's schema.

Files are ``NNNN_name.sql`` under ``migrations/shared`` and ``migrations/memory``. Each file
runs once, in its own transaction, under a PostgreSQL advisory lock so that two processes
starting together (API replicas, a Helm migration job) apply it exactly once. An applied
shared file whose text changed is refused: migrations are append-only history.

Memories are migrated lazily (on first access when behind) so start-up cost does not grow
with the number of memories; ``fortemi migrate --all-memories`` does them eagerly.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from fortemi.platform.database import Database

__all__ = ["Migration", "MigrationError", "Migrations", "default_migrations_root"]

log = logging.getLogger(__name__)

_FILE = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")
# Arbitrary constants that name Fortemi's advisory locks (pg_advisory_lock takes a bigint).
_SHARED_LOCK = 0x46_4F_52_54_45_4D_49_01
_MEMORY_LOCK_NAMESPACE = "fortemi.memory-migration:"


class MigrationError(RuntimeError):
    """The migration files or the database's migration history are inconsistent."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def default_migrations_root() -> Path:
    """``migrations/`` beside the package in a checkout, or the copy inside a wheel."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package.parent / "migrations", package / "_data" / "migrations"):
        if (candidate / "shared").is_dir():
            return candidate
    raise MigrationError(f"No migrations directory found near {package}")


def _load(directory: Path) -> tuple[Migration, ...]:
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE.fullmatch(path.name)
        if not match:
            raise MigrationError(f"{path}: migration files are named NNNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"{path}: version {version} appears twice")
        found[version] = Migration(version, match.group(2), path.read_text(encoding="utf-8"))
    versions = sorted(found)
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"{directory}: versions must run 1..n without gaps: {versions}")
    return tuple(found[v] for v in versions)


class Migrations:
    """The migration set on disk and the operations that apply it."""

    def __init__(self, root: Path | None = None) -> None:
        root = root or default_migrations_root()
        self.shared = _load(root / "shared")
        self.memory = _load(root / "memory")

    @property
    def memory_version(self) -> int:
        return len(self.memory)

    async def migrate_shared(self, db: Database) -> list[str]:
        """Apply pending shared migrations; returns the names applied."""
        applied: list[str] = []
        async with db.connection() as conn:
            await conn.execute("SELECT pg_advisory_lock($1)", _SHARED_LOCK)
            try:
                await conn.execute(
                    """CREATE TABLE IF NOT EXISTS public.schema_migration (
                           version integer PRIMARY KEY,
                           name text NOT NULL,
                           checksum text NOT NULL,
                           applied_at timestamptz NOT NULL DEFAULT now())"""
                )
                done = {
                    row["version"]: row["checksum"]
                    for row in await conn.fetch(
                        "SELECT version, checksum FROM public.schema_migration"
                    )
                }
                for migration in self.shared:
                    if migration.version in done:
                        if done[migration.version] != migration.checksum:
                            raise MigrationError(
                                f"shared migration {migration.version:04d}_{migration.name} was "
                                "edited after it was applied; add a new migration instead"
                            )
                        continue
                    async with conn.transaction():
                        await conn.execute(migration.sql)
                        await conn.execute(
                            "INSERT INTO public.schema_migration (version, name, checksum) "
                            "VALUES ($1, $2, $3)",
                            migration.version,
                            migration.name,
                            migration.checksum,
                        )
                    applied.append(f"{migration.version:04d}_{migration.name}")
                    log.info("applied shared migration %04d_%s", migration.version, migration.name)
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", _SHARED_LOCK)
        await db.types_installed()
        return applied

    async def migrate_memory(self, conn: asyncpg.Connection, name: str) -> int:
        """Bring memory ``name`` to the latest template version inside ``conn``'s transaction.

        ``conn`` must be in a transaction opened by ``Database.memory_transaction(name)`` (so
        the template's unqualified names land in the memory's schema). Returns the version.
        """
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", _MEMORY_LOCK_NAMESPACE + name
        )
        current = await conn.fetchval(
            "SELECT schema_version FROM public.memory WHERE name = $1", name
        )
        if current is None:
            raise MigrationError(f"memory {name!r} is not registered")
        if current > self.memory_version:
            raise MigrationError(
                f"memory {name!r} is at template version {current}, newer than this build "
                f"({self.memory_version}); upgrade Fortemi"
            )
        for migration in self.memory[current:]:
            await conn.execute(migration.sql)
            log.info("memory %s: applied %04d_%s", name, migration.version, migration.name)
        if current < self.memory_version:
            await conn.execute(
                "UPDATE public.memory SET schema_version = $2 WHERE name = $1",
                name,
                self.memory_version,
            )
        return self.memory_version
