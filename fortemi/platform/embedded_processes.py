"""Processes and users of the embedded servers: which process is a server, how to stop it,
and who still uses a data directory's servers.

A server is known by its pid *and* its command line: after a crash or a reboot a pid file
can name a pid the system has since given to another process, which must never be taken
for (or stopped as) our server. A zombie counts as gone: it no longer serves anything.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import psutil

from fortemi.platform.errors import Unavailable

__all__ = ["Users", "find_process", "lifecycle", "stop_process", "wait_gone"]

_POLL_SECONDS = 0.05


def find_process(pid: int | None, marker: str) -> psutil.Process | None:
    """The running process ``pid`` if its command line mentions ``marker``, else None."""
    if pid is None or pid <= 0:
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        if marker not in " ".join(process.cmdline()):
            return None
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return process


def _gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(process: psutil.Process, timeout: float) -> bool:
    """Whether ``process`` ended within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not _gone(process):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_SECONDS)
    return True


def stop_process(
    process: psutil.Process, what: str, steps: Sequence[tuple[signal.Signals, float]]
) -> None:
    """Send each ``(signal, grace seconds)`` in turn until ``process`` is gone.

    The last step should be SIGKILL: only a process stuck in the kernel survives it.
    """
    for sig, grace in steps:
        try:
            process.send_signal(sig)
        except psutil.NoSuchProcess:
            return
        if wait_gone(process, grace):
            return
    raise Unavailable(f"the embedded {what} (pid {process.pid}) did not stop")


@contextmanager
def lifecycle(run_dir: Path) -> Iterator[None]:
    """Hold the data directory's start/stop lock: one process at a time starts or stops
    its servers, so none ever finds a server half started or half stopped.

    An flock, so the kernel releases it when its holder dies, however it dies.
    """
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(run_dir / "lifecycle.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class Users:
    """This process's use of a data directory's embedded servers, counted by the kernel.

    Every process that uses them holds a shared flock on ``run/users.lock`` for as long as
    it does. The kernel drops the lock when the process ends, by ``kill -9`` too, so a
    crashed user never keeps the servers from being stopped by the last live one, and no
    list of pids on disk can go stale. Call :meth:`join` and :meth:`leave` inside
    :func:`lifecycle`: no two processes then test the lock at once.
    """

    def __init__(self, run_dir: Path) -> None:
        self._path = run_dir / "users.lock"
        self._fd: int | None = None

    def join(self) -> bool:
        """Become a user; whether no other process uses the servers."""
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        self._fd = fd
        alone = _try_exclusive(fd)
        fcntl.flock(fd, fcntl.LOCK_SH)  # converts the exclusive lock, if taken
        return alone

    def leave(self) -> bool:
        """Stop being a user; whether this process was the last."""
        fd, self._fd = self._fd, None
        if fd is None:
            return False
        try:
            return _try_exclusive(fd)
        finally:
            os.close(fd)


def _try_exclusive(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
