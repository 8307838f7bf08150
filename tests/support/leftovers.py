"""A pytest plugin: a test session leaves no process behind.

A process belongs to the session when it carries the session's mark in its environment
(``SESSION_VARIABLE``: the session's pid and start time, inherited by everything it starts,
``fortemi serve`` and ``fortemi worker`` subprocesses included), or when it works in the
session's temporary directory (its current directory or command line is there). The second
finds the embedded servers: Redis and PostgreSQL overwrite their environment with their
process titles, and every server a test starts has its data directory there.

At the end of the session any such process still running fails the run (exit status 1,
each survivor named) and is killed, so that a failure never piles up servers from one run
to the next. A session that was itself killed cannot check: the next one kills what a
session no longer running left, known by the mark in its environment or in its temporary
directory (``MARK_FILE``). Nothing else is touched: a process without a mark is another
tool's, or another checkout's, to stop.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

__all__ = ["MARK_FILE", "SESSION_VARIABLE", "pytest_sessionfinish", "pytest_sessionstart"]

# Not FORTEMI_*: tests hand subprocesses the environment without Fortemi's own settings.
SESSION_VARIABLE = "PYTEST_FORTEMI_SESSION"
MARK_FILE = ".fortemi-session"
# Servers are stopped (and waited for) by the fixtures that started them; this only
# covers a process that is still on its way out when the session ends.
_GRACE_SECONDS = 30.0
_ORPHANS = pytest.StashKey[list[str]]()


@dataclass(frozen=True)
class _Seen:
    process: psutil.Process
    mark: str | None  # the session mark in its environment
    where: str  # its current directory and command line


def _mark(process: psutil.Process) -> str:
    return f"{process.pid}:{process.create_time()}"


def _session_running(mark: str) -> bool:
    pid, _, _ = mark.partition(":")
    try:
        return _mark(psutil.Process(int(pid))) == mark
    except (ValueError, psutil.NoSuchProcess):
        return False


def _processes() -> list[_Seen]:
    # This process and the ones that started it (a shell, `timeout`, make) are never
    # leftovers, even when their command line names the base temporary directory.
    ours = {os.getpid(), *(parent.pid for parent in psutil.Process().parents())}
    seen = []
    for process in psutil.process_iter():
        if process.pid in ours:
            continue
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            mark = process.environ().get(SESSION_VARIABLE)
            where = " ".join([process.cwd(), *process.cmdline()])
        except psutil.Error:  # gone meanwhile, or not ours to read
            continue
        seen.append(_Seen(process, mark, where))
    return seen


def _session_dir(where: str, root: Path) -> Path | None:
    """The session directory under ``root`` (pytest's base temporary directory's parent)
    that ``where`` names, if any."""
    prefix = f"{root}{os.sep}"
    start = where.find(prefix)
    if start < 0:
        return None
    name = where[start + len(prefix) :].split(os.sep, 1)[0].split(" ", 1)[0]
    return root / name if name else None


def _orphaned(seen: _Seen, root: Path) -> bool:
    if seen.mark is not None:
        return not _session_running(seen.mark)
    directory = _session_dir(seen.where, root)
    if directory is None:
        return False
    try:
        mark = (directory / MARK_FILE).read_text()
    except OSError:  # a session without this plugin, or its directory gone: not ours
        return False
    return not _session_running(mark)


def _describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid}: {' '.join(process.cmdline())}"
    except psutil.Error:
        return f"pid {process.pid}"


def _kill(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=_GRACE_SECONDS)


def _basetemp(config: pytest.Config) -> Path:
    # The tmp_path_factory fixture's object, set up by pytest's tmpdir plugin.
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory.getbasetemp().resolve()


def pytest_sessionstart(session: pytest.Session) -> None:
    basetemp = _basetemp(session.config)
    orphans = [seen.process for seen in _processes() if _orphaned(seen, basetemp.parent)]
    if orphans:
        session.config.stash[_ORPHANS] = [_describe(process) for process in orphans]
        _kill(orphans)
    mark = _mark(psutil.Process())
    (basetemp / MARK_FILE).write_text(mark)
    os.environ[SESSION_VARIABLE] = mark


def _started_by(mark: str, basetemp: Path) -> list[psutil.Process]:
    inside = f"{basetemp}{os.sep}"
    return [
        seen.process
        for seen in _processes()
        if seen.mark == mark or (seen.mark is None and inside in f"{seen.where}{os.sep}")
    ]


# trylast: after pytest's own session finish, which tears down the session's fixtures
# when a run stops early (-x, Ctrl-C), and with them the servers they started.
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    mark = os.environ.get(SESSION_VARIABLE)
    if mark is None:
        return
    basetemp = _basetemp(session.config)
    deadline = time.monotonic() + _GRACE_SECONDS
    survivors = _started_by(mark, basetemp)
    while survivors and time.monotonic() < deadline:
        time.sleep(0.2)
        survivors = _started_by(mark, basetemp)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    orphans = session.config.stash.get(_ORPHANS, [])
    if orphans and reporter is not None:
        reporter.write_line(
            f"stopped {len(orphans)} process(es) left by a test session that did not end:"
        )
        for line in orphans:
            reporter.write_line(f"  {line}")
    if not survivors:
        return
    names = [_describe(process) for process in survivors]
    _kill(survivors)
    message = "\n".join(
        [f"{len(names)} process(es) started by this session outlived it (now killed):", *names]
    )
    if reporter is not None:
        reporter.write_sep("=", "processes left running", red=True)
        reporter.write_line(message)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
