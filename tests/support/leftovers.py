"""A pytest plugin: a test session leaves no process behind.

At its start the session marks its environment (``SESSION_VARIABLE``, its pid and start
time), which every process it starts inherits: embedded PostgreSQL and Redis servers,
``fortemi serve`` and ``fortemi worker`` subprocesses, and what they start in turn, even
once daemonized. At its end any marked process still running fails the run (exit status
1, with each survivor named) and is killed, so that a failure never piles up servers
from one run to the next. A session that was itself killed cannot check: the next one
kills what it finds marked by a session no longer running.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest

__all__ = ["SESSION_VARIABLE", "pytest_sessionfinish", "pytest_sessionstart"]

# Not FORTEMI_*: tests hand subprocesses the environment without Fortemi's own settings.
SESSION_VARIABLE = "PYTEST_FORTEMI_SESSION"
# Servers are stopped (and waited for) by the fixtures that started them; this only
# covers a process that is still being reaped when the session ends.
_GRACE_SECONDS = 30.0
_ORPHANS = pytest.StashKey[list[str]]()


def _mark(process: psutil.Process) -> str:
    return f"{process.pid}:{process.create_time()}"


def _marked() -> list[tuple[psutil.Process, str]]:
    """Running processes whose environment carries a session mark, with the mark."""
    found = []
    me = os.getpid()
    for process in psutil.process_iter():
        try:
            if process.pid == me or process.status() == psutil.STATUS_ZOMBIE:
                continue
            mark = process.environ().get(SESSION_VARIABLE)
        except psutil.Error:  # gone meanwhile, or not ours to read
            continue
        if mark is not None:
            found.append((process, mark))
    return found


def _started_by(mark: str) -> list[psutil.Process]:
    return [process for process, found in _marked() if found == mark]


def _session_running(mark: str) -> bool:
    pid, _, _ = mark.partition(":")
    try:
        return _mark(psutil.Process(int(pid))) == mark
    except (ValueError, psutil.NoSuchProcess):
        return False


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


def pytest_sessionstart(session: pytest.Session) -> None:
    orphans = [process for process, mark in _marked() if not _session_running(mark)]
    if orphans:
        session.config.stash[_ORPHANS] = [_describe(process) for process in orphans]
        _kill(orphans)
    os.environ[SESSION_VARIABLE] = _mark(psutil.Process())


# trylast: after pytest's own session finish, which tears down the session's fixtures
# when a run stops early (-x, Ctrl-C), and with them the servers they started.
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    mark = os.environ.get(SESSION_VARIABLE)
    if mark is None:
        return
    deadline = time.monotonic() + _GRACE_SECONDS
    survivors = _started_by(mark)
    while survivors and time.monotonic() < deadline:
        time.sleep(0.2)
        survivors = _started_by(mark)
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
