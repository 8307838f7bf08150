"""Finding the embedded servers of a data directory by process, as an operator would."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

import psutil

__all__ = ["alive", "embedded_servers", "server_pids", "wait_gone"]

_NAMES = ("postgres", "redis-server")


def embedded_servers(root: Path) -> list[psutil.Process]:
    """Running PostgreSQL and Redis processes working under ``root``: their current
    directory is there (both servers change into their data directory), or their command
    line names it."""
    root_text = str(root.resolve())
    found = []
    for process in psutil.process_iter(["name", "cmdline", "cwd", "status"]):
        info = process.info
        if info["status"] == psutil.STATUS_ZOMBIE or info["name"] not in _NAMES:
            continue
        where = " ".join([*(info["cmdline"] or []), info["cwd"] or ""])
        if root_text in where:
            found.append(process)
    return found


def server_pids(home: Path) -> dict[str, int]:
    """The main process of each embedded server of ``home``: ``{"postgres": ..., "redis-server": ...}``
    (a PostgreSQL backend's parent is the postmaster; the postmaster's is not PostgreSQL)."""
    pids: dict[str, int] = {}
    for process in embedded_servers(home):
        try:
            name = process.name()
            parent = process.parent()
        except psutil.NoSuchProcess:
            continue
        if parent is not None and parent.name() == name:
            continue
        assert name not in pids, f"two {name} servers for {home}: {pids[name]}, {process.pid}"
        pids[name] = process.pid
    return pids


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids: Iterable[int], timeout: float = 60.0) -> list[int]:
    """The pids still alive after up to ``timeout`` seconds (a generous bound, not a
    measurement: the wait ends as soon as all are gone)."""
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [pid for pid in left if alive(pid)]
    return left
