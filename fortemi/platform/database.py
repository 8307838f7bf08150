"""PostgreSQL access: the connection pool and the one tenant-scoping choke point.

Invariant: every statement that touches a memory's tables runs inside a transaction opened
by :meth:`Database.memory_transaction`, which did ``SET LOCAL search_path`` to that memory's
schema. ``SET LOCAL`` ends with the transaction, so a pooled connection can never carry one
tenant's path into another tenant's request. Nothing else in the code base sets the path.

asyncpg exceptions are translated here, once, into :mod:`fortemi.platform.errors`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeAlias, cast

import asyncpg
import numpy as np
import numpy.typing as npt
from asyncpg.pool import PoolConnectionProxy
from pgvector.asyncpg import register_vector

from fortemi.platform.errors import BadUserInput, Conflict, NotFound, Unavailable

__all__ = [
    "MEMORY_NAME",
    "SCHEMA_PREFIX",
    "Connection",
    "Database",
    "is_memory_name",
    "memory_schema",
    "set_local",
    "stored_vector",
    "validate_memory_name",
]

log = logging.getLogger(__name__)

# Pooled connections are proxies that behave as connections; code is typed against this.
Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"
SCHEMA_PREFIX = "mem_"
# The one definition of a memory name; it becomes part of a schema name (mem_<name>).
MEMORY_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_SETTING_NAME = re.compile(r"[a-z_]+(\.[a-z_]+)?")


def is_memory_name(name: object) -> bool:
    """Whether ``name`` is a valid memory name (the whole string matches :data:`MEMORY_NAME`)."""
    return isinstance(name, str) and MEMORY_NAME.fullmatch(name) is not None


def validate_memory_name(name: str) -> str:
    """Return ``name`` if it is a valid memory name, else raise :class:`BadUserInput`."""
    if not is_memory_name(name):
        raise BadUserInput(
            f"A memory name must match ^{MEMORY_NAME.pattern}$: a lowercase letter, then up to "
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


class _Reset:
    """The pool's ``reset``: what a connection's release runs after asyncpg's own cleanup
    (which rolls back an open transaction and drops listener callbacks).

    asyncpg's default runs ``get_reset_query()`` (unlock every advisory lock, close
    cursors, UNLISTEN, RESET ALL) on every release: one round trip each time, twice per
    ``graph`` request. A connection borrowed only for :meth:`Database.memory_transaction`,
    :meth:`Database.shared_transaction` or :meth:`Database.statements` (self-committing
    statements: the audit log's appends) leaves nothing of that behind: its settings are
    ``SET LOCAL`` and its advisory locks ``pg_advisory_xact_lock``, both gone at COMMIT or
    ROLLBACK, and no such code LISTENs, declares a cursor WITH HOLD or creates a temporary
    table (tests/unit/platform/test_session_state.py checks the code for those). Those
    releases skip the query; a bare :meth:`Database.connection` (migrations take a session
    advisory lock there) is reset in full.

    Keyed by the backend's pid, which the pool's proxy and the connection both report."""

    def __init__(self) -> None:
        self.scoped: set[int] = set()

    async def __call__(self, conn: asyncpg.Connection) -> None:
        pid = conn.get_server_pid()
        if pid in self.scoped:
            self.scoped.discard(pid)
            return
        query = conn.get_reset_query()
        if query:
            await conn.execute(query)


def stored_vector(value: object) -> npt.NDArray[np.float32]:
    """A ``vector`` column's value as float32 numpy: the pool's codec decodes pgvector's
    binary form to a ``pgvector.Vector``; anything array-like passes through."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)


# What a concurrent transaction can make ours fail with; retrying the operation succeeds.
_CONCURRENT_CHANGE = (asyncpg.SerializationError, asyncpg.DeadlockDetectedError)


def _concurrent_change(subject: str | None) -> Conflict:
    """The Conflict for a transaction a concurrent one made fail, naming ``subject`` (what
    the caller was changing, e.g. ``"Note <id>"``) when the caller knows it."""
    what = subject or "The data this operation read or wrote"
    return Conflict(f"{what} changed concurrently; retry the operation")


def _translate(exc: BaseException) -> Exception | None:
    """Map a database exception to a Fortemi error, or ``None`` when it is a bug."""
    if isinstance(exc, _CONCURRENT_CHANGE):
        return _concurrent_change(None)
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

    def __init__(
        self, pool: asyncpg.Pool, codecs: _Codecs | None = None, reset: _Reset | None = None
    ) -> None:
        self._pool = pool
        self._codecs = codecs or _Codecs()
        # Without the pool's reset (a pool built elsewhere) marks are never consumed:
        # nothing is marked then.
        self._reset = reset
        # Ends of read-only transactions still running (see memory_read); close awaits them.
        self._ending: set[asyncio.Task[None]] = set()

    @classmethod
    async def connect(
        cls, dsn: str, *, min_size: int = 2, max_size: int = 10, statement_timeout_ms: int = 0
    ) -> Database:
        codecs, reset = _Codecs(), _Reset()
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                init=codecs,
                reset=reset,
                server_settings={
                    "application_name": "fortemi",
                    "statement_timeout": str(statement_timeout_ms),
                    "search_path": "public",
                },
            )
        except (OSError, asyncpg.PostgresError) as exc:
            raise Unavailable(f"Cannot connect to PostgreSQL: {type(exc).__name__}") from exc
        return cls(pool, codecs, reset)

    async def types_installed(self) -> None:
        """Called once the shared migrations ran (pgvector is installed by then): the
        connections opened before it, which have no vector codec, are replaced on their
        next use."""
        if self._codecs.without_vector:
            self._codecs.without_vector = False
            await self._pool.expire_connections()

    async def close(self) -> None:
        while self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)
        await self._pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A bare pooled connection for maintenance work (migrations, health checks); its
        session is reset in full when it goes back."""
        async with self._acquire(scoped=False) as conn:
            yield conn

    @asynccontextmanager
    async def statements(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection for statements that each commit on their own (autocommit)
        and leave no session state behind (see :class:`_Reset`): its release skips the
        session reset, as a transaction's does. Anything else takes :meth:`connection`."""
        async with self._acquire(scoped=True) as conn:
            yield conn

    @asynccontextmanager
    async def _acquire(self, *, scoped: bool) -> AsyncIterator[asyncpg.Connection]:
        """``scoped``: the connection is used only inside one transaction, so its release
        skips the session reset (see :class:`_Reset`)."""
        try:
            async with self._pool.acquire() as conn:
                if self._reset is not None:
                    marks, pid = self._reset.scoped, conn.get_server_pid()
                    if scoped:
                        marks.add(pid)
                    else:
                        marks.discard(pid)
                yield cast(Connection, conn)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            translated = _translate(exc)
            if translated is None:
                raise
            raise translated from exc

    @asynccontextmanager
    async def shared_transaction(
        self, *, subject: str | None = None
    ) -> AsyncIterator[asyncpg.Connection]:
        """A transaction over the shared ``public`` schema only.

        ``subject`` names what the caller changes (``"Job <id>"``), for the Conflict a
        concurrent transaction causes; without it the Conflict names no resource.
        """
        async with self._acquire(scoped=True) as conn:
            try:
                async with conn.transaction():
                    yield conn
            except _CONCURRENT_CHANGE as exc:
                raise _concurrent_change(subject) from exc

    @asynccontextmanager
    async def memory_transaction(
        self,
        memory: str,
        *,
        isolation: str | None = None,
        local: Mapping[str, int] | None = None,
        subject: str | None = None,
    ) -> AsyncIterator[asyncpg.Connection]:
        """The choke point: a transaction whose ``search_path`` is memory ``memory`` first.

        ``public`` stays on the path (after the memory) for extension types such as
        ``vector``. ``local``: integer settings for this transaction only (``SET LOCAL``),
        such as ``hnsw.ef_search``. BEGIN and the SET LOCALs go in one round trip; the
        schema name is validated and quoted by :func:`memory_schema`, setting names are
        checked and values are integers, so nothing a caller sends is spliced in unchecked.

        A missing table is :class:`NotFound` only when the memory's schema is gone (the
        memory was deleted meanwhile); inside a schema that exists it is a bug and
        propagates as such. ``subject`` names what the caller changes (``"Note <id>"``), for
        the Conflict a concurrent transaction causes; without it the Conflict names no
        resource.
        """
        begin = _begin(memory_schema(memory), isolation, local, read_only=False)
        async with self._acquire(scoped=True) as conn:
            await conn.execute(begin)
            try:
                yield conn
            except asyncpg.UndefinedTableError as exc:
                await conn.execute("ROLLBACK")
                if await _schema_exists(conn, memory):
                    raise
                raise NotFound(f"Memory {memory!r} does not exist") from exc
            except _CONCURRENT_CHANGE as exc:
                if not conn.is_closed():
                    await conn.execute("ROLLBACK")
                raise _concurrent_change(subject) from exc
            except BaseException:
                if not conn.is_closed():
                    await conn.execute("ROLLBACK")
                raise
            else:
                await conn.execute("COMMIT")

    @asynccontextmanager
    async def memory_read(
        self,
        memory: str,
        *,
        isolation: str | None = None,
        local: Mapping[str, int] | None = None,
    ) -> AsyncIterator[asyncpg.Connection]:
        """:meth:`memory_transaction` for reads that answer a caller: ``READ ONLY``, and its
        end is not waited for (``isolation`` and ``local`` as there).

        The transaction starts as the choke point starts every one (``search_path`` set
        local to the memory's schema, in the same round trip as ``BEGIN``) but read-only,
        so PostgreSQL refuses any write in it: its ``COMMIT`` then has nothing to make
        durable and can change no answer. The caller goes on (answers) as soon as its
        block ends, while the ``COMMIT`` runs in a task that hands the connection back to
        the pool only once the transaction is over, so no connection goes back inside a
        transaction or with the memory's path. :meth:`close` waits for such tasks. An
        error inside the block rolls back before it propagates, as in
        :meth:`memory_transaction`."""
        begin = _begin(memory_schema(memory), isolation, local, read_only=True)
        try:
            proxy = await self._pool.acquire()
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            translated = _translate(exc)
            if translated is None:
                raise
            raise translated from exc
        conn = cast(Connection, proxy)
        if self._reset is not None:
            self._reset.scoped.add(conn.get_server_pid())
        ending = False
        try:
            try:
                await conn.execute(begin)
                yield conn
            except asyncpg.UndefinedTableError as exc:
                await conn.execute("ROLLBACK")
                if await _schema_exists(conn, memory):
                    raise
                raise NotFound(f"Memory {memory!r} does not exist") from exc
            except BaseException:
                if not conn.is_closed():
                    await conn.execute("ROLLBACK")
                raise
            task = asyncio.get_running_loop().create_task(self._end_read(conn, proxy))
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)
            ending = True
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            translated = _translate(exc)
            if translated is None:
                raise
            raise translated from exc
        finally:
            if not ending:
                await self._pool.release(proxy)

    async def _end_read(self, conn: Connection, proxy: PoolConnectionProxy[Any]) -> None:
        try:
            await conn.execute("COMMIT")
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
            # Nothing was written; the pool's release resets or discards the connection.
            log.warning("ending a read-only transaction failed", exc_info=True)
        finally:
            await self._pool.release(proxy)

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


async def _schema_exists(conn: Connection, memory: str) -> bool:
    found = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", SCHEMA_PREFIX + memory
    )
    return bool(found)


def _begin(
    schema: str, isolation: str | None, local: Mapping[str, int] | None, *, read_only: bool
) -> str:
    """BEGIN and the transaction's SET LOCALs, for one round trip: ``schema`` is validated
    and quoted by :func:`memory_schema`, setting names are checked and values integers, so
    nothing a caller sends is spliced in unchecked."""
    modes = ([f"ISOLATION LEVEL {_isolation(isolation)}"] if isolation else []) + (
        ["READ ONLY"] if read_only else []
    )
    statements = [" ".join(["BEGIN", *modes]), f"SET LOCAL search_path TO {schema}, public"]
    for name, value in (local or {}).items():
        if not _SETTING_NAME.fullmatch(name) or type(value) is not int:
            raise ValueError(f"not a setting this transaction can take: {name}={value!r}")
        statements.append(f"SET LOCAL {name} = {value}")
    return "; ".join(statements)


def _isolation(level: str) -> str:
    levels = {"serializable": "SERIALIZABLE", "repeatable_read": "REPEATABLE READ"}
    return levels[level]
