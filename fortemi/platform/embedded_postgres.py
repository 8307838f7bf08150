"""The embedded PostgreSQL 16 + pgvector, from the ``pgserver`` package, in ``<home>/postgres``.

pgserver makes the data directory and starts the server (as its own system user when we
run as root), reachable over a Unix socket only. Whether a server runs is decided from the
postmaster's pid (a live ``postgres`` process for this data directory) and its socket
(accepting connections), never from pgserver's list of user pids, which a crashed user
leaves stale. Stopping is ours too: a signal to the postmaster, and a wait for its pid.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import psutil

from fortemi.platform.embedded_processes import find_process, stop_process
from fortemi.platform.errors import Unavailable

__all__ = ["TUNING_FILE", "EmbeddedPostgres", "postgres_tuning"]

log = logging.getLogger(__name__)

TUNING_FILE = "fortemi.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"
_MB = 2**20
# Fast shutdown rolls back open transactions and disconnects clients; immediate shutdown
# (SIGQUIT) skips the checkpoint and recovers at the next start; SIGKILL for a hung server.
_STOP_STEPS = ((signal.SIGINT, 60.0), (signal.SIGQUIT, 15.0), (signal.SIGKILL, 15.0))
# After a crash the old server's backends take a moment to notice the postmaster is gone
# and release the shared memory a new one needs.
_START_ATTEMPTS = 5


def postgres_tuning(memory_bytes: int) -> dict[str, str]:
    """Settings for an embedded PostgreSQL sharing a machine with ``memory_bytes`` of RAM.

    initdb's defaults (shared_buffers 128 MB) are sized for the smallest machine; a memory
    of 100k chunks has about 1.1 GB of search indexes (postings 880 MB, HNSW 200 MB).
    These follow the usual rules of thumb: a quarter of RAM for shared buffers, capped at
    1 GB because the app shares the machine, and half of RAM as the planner's cache
    estimate. JIT is off: it pays only for long analytic queries, and when it starts it
    compiles for tens of milliseconds in the middle of a search.
    """
    megabytes = memory_bytes // _MB
    return {
        "shared_buffers": f"{max(128, min(megabytes // 4, 1024))}MB",
        "effective_cache_size": f"{max(512, megabytes // 2)}MB",
        "maintenance_work_mem": f"{max(64, min(megabytes // 16, 1024))}MB",
        "work_mem": "16MB",
        "random_page_cost": "1.1",
        "jit": "off",
    }


def _memory_bytes() -> int:
    """Physical memory, or the cgroup's limit when it is lower (containers)."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return physical
    return min(physical, int(limit)) if limit.isdigit() else physical


def _configure(pgdata: Path, settings: dict[str, str]) -> bool:
    """Write ``settings`` to the data directory's tuning file, included from
    postgresql.conf; whether anything changed (a restart is then needed)."""
    text = "# Written by Fortemi for the embedded server; edits are overwritten.\n" + "".join(
        f"{name} = '{value}'\n" for name, value in settings.items()
    )
    tuning, main = pgdata / TUNING_FILE, pgdata / "postgresql.conf"
    changed = False
    if not tuning.exists() or tuning.read_text() != text:
        tuning.write_text(text)
        tuning.chmod(0o644)  # read by the server, which may run as another user
        changed = True
    if _INCLUDE not in main.read_text():
        with main.open("a") as conf:
            conf.write(f"\n{_INCLUDE}\n")
        changed = True
    return changed


@dataclass(frozen=True, slots=True)
class _Postmaster:
    """What ``postmaster.pid`` says about the server that wrote it."""

    pid: int
    port: int
    socket_dir: Path

    @property
    def socket(self) -> Path:
        return self.socket_dir / f".s.PGSQL.{self.port}"

    @property
    def uri(self) -> str:
        return f"postgresql://postgres:@/postgres?host={self.socket_dir}"


class EmbeddedPostgres:
    """The PostgreSQL server of one data directory. Not thread-safe; callers hold the data
    directory's lifecycle lock (see :mod:`fortemi.platform.embedded_processes`)."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.expanduser().resolve()

    def ensure(self, *, alone: bool) -> str:
        """The server's URI, starting a fresh server when none runs or the one found no
        longer answers. ``alone``: no other process uses the server, so it may restart
        to apply changed tuning; otherwise the change applies at its next start."""
        self.pgdata.mkdir(parents=True, exist_ok=True, mode=0o700)
        running = self._answering()
        if running is not None:
            if _configure(self.pgdata, postgres_tuning(_memory_bytes())) and alone:
                log.info("restarting the embedded PostgreSQL with its new tuning settings")
                self.stop()
                return self._start().uri
            return running.uri
        self.stop()  # a server that runs but does not answer, or a stale postmaster.pid
        fresh = not (self.pgdata / "PG_VERSION").exists()
        if not fresh:
            _configure(self.pgdata, postgres_tuning(_memory_bytes()))
        started = self._start()
        if fresh and _configure(self.pgdata, postgres_tuning(_memory_bytes())):
            # initdb and the first start are one step in pgserver: restart at once so the
            # settings hold from the start.
            log.info("restarting the new embedded PostgreSQL with its tuning settings")
            self.stop()
            started = self._start()
        return started.uri

    def stop(self) -> None:
        """Stop the server of this data directory if one runs, and wait until it is gone.
        A ``postmaster.pid`` naming no server of ours is removed, so that neither
        PostgreSQL nor pgserver takes a recycled pid for a running server."""
        postmaster = self._postmaster()
        process = None if postmaster is None else self._process(postmaster.pid)
        if process is not None:
            log.info("stopping the embedded PostgreSQL (pid %d)", process.pid)
            stop_process(process, "PostgreSQL", _STOP_STEPS)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)

    def _start(self) -> _Postmaster:
        log.info("starting the embedded PostgreSQL in %s", self.pgdata)
        for attempt in range(1, _START_ATTEMPTS + 1):
            fresh = not (self.pgdata / "PG_VERSION").exists()
            try:
                _pgserver_start(self.pgdata)
                break
            # pgserver raises OSError too, reading a log the server never got to write.
            except (subprocess.SubprocessError, OSError) as exc:
                if attempt == _START_ATTEMPTS:
                    raise Unavailable(
                        f"the embedded PostgreSQL did not start; see {self.pgdata / 'log'}"
                    ) from exc
                log.warning("the embedded PostgreSQL did not start; trying again")
                self.stop()
                if fresh:  # what a failed initdb left is all ours, and in the way of the next
                    _empty(self.pgdata)
                time.sleep(attempt)
        postmaster = self._answering()
        if postmaster is None:
            raise Unavailable(
                f"the embedded PostgreSQL in {self.pgdata} started but does not answer"
            )
        return postmaster

    def _answering(self) -> _Postmaster | None:
        """The running server if it accepts connections on its socket."""
        postmaster = self._postmaster()
        if postmaster is None or self._process(postmaster.pid) is None:
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(10.0)
            try:
                probe.connect(str(postmaster.socket))
            except OSError:
                return None
        return postmaster

    def _process(self, pid: int) -> psutil.Process | None:
        process = find_process(pid, str(self.pgdata))
        if process is None or "postgres" not in process.name():
            return None
        return process

    def _postmaster(self) -> _Postmaster | None:
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
            return _Postmaster(pid=int(lines[0]), port=int(lines[3]), socket_dir=Path(lines[4]))
        except (OSError, ValueError, IndexError):  # absent, or cut short by a crash
            return None


def _empty(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _pgserver_start(pgdata: Path) -> None:
    with warnings.catch_warnings():
        # pgserver asks platformdirs for a runtime dir, which warns (and falls back to
        # /tmp) on hosts without XDG_RUNTIME_DIR, such as containers and CI.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        # Imported here: production deployments never start it.
        from pgserver.postgres_server import PostgresServer

        # cleanup_mode=None: pgserver never stops the server; EmbeddedPostgres.stop does.
        PostgresServer(pgdata, cleanup_mode=None)
