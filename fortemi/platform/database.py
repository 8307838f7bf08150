"""PostgreSQL access: the connection pool and the one tenant-scoping choke point.

Invariant: every statement that touches a memory's tables runs inside a transaction opened
by :meth:`Database.memory_transaction`, which did ``SET LOCAL search_path`` to that memory's
schema. ``SET LOCAL`` ends with the transaction, so a pooled connection can never carry one
tenant's path into another tenant's request. Nothing else in the code base sets the path.

asyncpg exceptions are translated here, once, into :mod:`fortemi.platform.errors`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeAlias, cast

import asyncpg
from pgvector.asyncpg import register_vector

from fortemi.platform.errors import BadUserInput, Conflict, NotFound, Unavailable

__all__ = [
    "SCHEMA_PREFIX",
    "Connection",
    "Database",
    "memory_schema",
    "set_local",
    "validate_memory_name",
]

log = logging.getLogger(__name__)

# Pooled connections are proxies that behave as connections; code is typed against this.
Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"
SCHEMA_PREFIX = "mem_"
_MEMORY_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_SETTING_NAME = re.compile(r"[a-z_]+(\.[a-z_]+)?")


def validate_memory_name(name: str) -> str:
    """Return ``name`` if it is a valid memory name, else raise :class:`BadUserInput`."""
    if not isinstance(name, str) or not _MEMORY_NAME.fullmatch(name):
        raise BadUserInput(
            "A memory name must match ^[a-z][a-z0-9_]{0,39}$: a lowercase letter, then up to "
            "39 lowercase letters, digits or underscores",
            field="name",
        )
    return name


def memory_schema(name: str) -> str:
    """The schema of memory ``name``, quoted; safe to splice because the name is validated."""
    return f'"{SCHEMA_PREFIX}{validate_memory_name(name)}"'


class _Codecs:
    """The pool's ``init``: the codecs every new connection gets.

    Vectors travel in pgvector's binary form (float32 both ways, bit for bit), never as
    text. The type is found in the schema the extension was installed in, not through the
    search path (a memory transaction puts the memory's schema first). A connection opened
    before the extension exists (a fresh database, before the shared migrations) has no
    vector codec; ``without_vector`` remembers it so those connections can be replaced.
    """

    def __init__(self) -> None:
        self.without_vector = False

    async def __call__(self, conn: asyncpg.Connection) -> None:
        for type_name in ("json", "jsonb"):
            await conn.set_type_codec(
                type_name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
            )
        schema = await conn.fetchval(
            "SELECT n.nspname FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        )
        if schema is None:
            self.without_vector = True
        else:
            await register_vector(conn, schema=schema)


def _translate(exc: BaseException) -> Exception | None:
    """Map a database exception to a Fortemi error, or ``None`` when it is a bug."""
    if isinstance(exc, asyncpg.SerializationError | asyncpg.DeadlockDetectedError):
        return Conflict("The note changed concurrently; retry the operation")
    if isinstance(exc, asyncpg.LockNotAvailableError):
        return Conflict("The resource is locked by another operation; retry shortly")
    if isinstance(
        exc, asyncpg.CharacterNotInRepertoireError | asyncpg.UntranslatableCharacterError
    ):
        return BadUserInput("Text must be valid UTF-8 without NUL characters")
    if isinstance(exc, asyncpg.QueryCanceledError):
        return Unavailable("The database did not answer in time; retry later")
    if isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.InterfaceError
        | asyncpg.CannotConnectNowError
        | ConnectionError
        | OSError,
    ):
        return Unavailable("The database is unavailable; retry later")
    return None


class Database:
    """A pool of connections and the transactions every service runs in."""

    def __init__(self, pool: asyncpg.Pool, codecs: _Codecs | None = None) -> None:
        self._pool = pool
        self._codecs = codecs or _Codecs()

    @classmethod
    async def connect(
        cls, dsn: str, *, min_size: int = 2, max_size: int = 10, statement_timeout_ms: int = 0
    ) -> Database:
        codecs = _Codecs()
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                init=codecs,
                server_settings={
                    "application_name": "fortemi",
                    "statement_timeout": str(statement_timeout_ms),
                    "search_path": "public",
                },
            )
        except (OSError, asyncpg.PostgresError) as exc:
            raise Unavailable(f"Cannot connect to PostgreSQL: {type(exc).__name__}") from exc
        return cls(pool, codecs)

    async def types_installed(self) -> None:
        """Called once the shared migrations ran (pgvector is installed by then): the
        connections opened before it, which have no vector codec, are replaced on their
        next use."""
        if self._codecs.without_vector:
            self._codecs.without_vector = False
            await self._pool.expire_connections()

    async def close(self) -> None:
        await self._pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A bare pooled connection for maintenance work (migrations, health checks)."""
        try:
            async with self._pool.acquire() as conn:
                yield cast(Connection, conn)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            translated = _translate(exc)
            if translated is None:
                raise
            raise translated from exc

    @asynccontextmanager
    async def shared_transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """A transaction over the shared ``public`` schema only."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def memory_transaction(
        self,
        memory: str,
        *,
        isolation: str | None = None,
        local: Mapping[str, int] | None = None,
    ) -> AsyncIterator[asyncpg.Connection]:
        """The choke point: a transaction whose ``search_path`` is memory ``memory`` first.

        ``public`` stays on the path (after the memory) for extension types such as
        ``vector``. ``local``: integer settings for this transaction only (``SET LOCAL``),
        such as ``hnsw.ef_search``. BEGIN and the SET LOCALs go in one round trip; the
        schema name is validated and quoted by :func:`memory_schema`, setting names are
        checked and values are integers, so nothing a caller sends is spliced in unchecked.
        """
        schema = memory_schema(memory)
        begin = "BEGIN" if isolation is None else f"BEGIN ISOLATION LEVEL {_isolation(isolation)}"
        statements = [begin, f"SET LOCAL search_path TO {schema}, public"]
        for name, value in (local or {}).items():
            if not _SETTING_NAME.fullmatch(name) or type(value) is not int:
                raise ValueError(f"not a setting this transaction can take: {name}={value!r}")
            statements.append(f"SET LOCAL {name} = {value}")
        async with self.connection() as conn:
            await conn.execute("; ".join(statements))
            try:
                yield conn
            except asyncpg.UndefinedTableError as exc:
                # The path names a schema that is gone: the memory was deleted meanwhile.
                await conn.execute("ROLLBACK")
                raise NotFound(f"Memory {memory!r} does not exist") from exc
            except BaseException:
                if not conn.is_closed():
                    await conn.execute("ROLLBACK")
                raise
            else:
                await conn.execute("COMMIT")

    async def fetchval(self, query: str, *args: Any) -> Any:
        async with self.connection() as conn:
            return await conn.fetchval(query, *args)

    def stats(self) -> Mapping[str, int]:
        return {"size": self._pool.get_size(), "idle": self._pool.get_idle_size()}


async def set_local(conn: Connection, name: str, value: int) -> None:
    """Change an integer setting for the rest of ``conn``'s transaction (``SET LOCAL``),
    as ``memory_transaction(local=...)`` does at its start; the same checks apply. Never
    ``search_path``: only the choke point sets that."""
    if not _SETTING_NAME.fullmatch(name) or type(value) is not int or name == "search_path":
        raise ValueError(f"not a setting this transaction can take: {name}={value!r}")
    await conn.execute("SELECT set_config($1, $2, true)", name, str(value))


def _isolation(level: str) -> str:
    levels = {"serializable": "SERIALIZABLE", "repeatable_read": "REPEATABLE READ"}
    return levels[level]
