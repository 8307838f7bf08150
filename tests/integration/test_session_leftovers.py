"""The test session's own check: a process it started that outlives it fails the run, and a
session that was killed leaves nothing that outlives the next one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.processes import embedded_servers, server_pids

ROOT = Path(__file__).resolve().parents[2]

_STARTS_REDIS = """
from pathlib import Path

from fortemi.platform.embedded import EmbeddedServices
from fortemi.platform.settings import Settings


def test_starts_redis_and_never_stops_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = Settings(home=home, DATABASE_URL="postgresql://postgres@unused.invalid/x")
    EmbeddedServices(home).start(settings)
"""

_DIES = """
import os
import signal

{starts}

def test_the_runner_is_killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _pytest(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    """A pytest session of its own with only the leftovers plugin, on one test file."""
    directory = tmp_path / name
    directory.mkdir()
    (tmp_path / "sessions").mkdir(exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / f"test_{name}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.support.leftovers",
            "-p",
            "no:cacheprovider",
            "-c",
            str(directory / "pytest.ini"),
            # Side by side, as pytest numbers its own: a session finds what one before left.
            "--basetemp",
            str(tmp_path / "sessions" / name),
            str(directory),
        ],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_server_left_running_fails_the_session_and_is_stopped(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "leaks", _STARTS_REDIS)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    assert "outlived it" in run.stdout
    assert "redis-server" in run.stdout
    assert embedded_servers(tmp_path) == []


def test_a_killed_session_leaves_nothing_past_the_next_one(tmp_path: Path) -> None:
    killed = _pytest(tmp_path, "killed", _DIES.format(starts=_STARTS_REDIS))
    assert killed.returncode == -9, killed.stdout + killed.stderr
    orphan = server_pids(tmp_path / "sessions" / "killed")["redis-server"]

    clean = _pytest(tmp_path, "clean", "def test_nothing() -> None:\n    pass\n")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "left by a test session that did not end" in clean.stdout
    assert str(orphan) in clean.stdout
    assert embedded_servers(tmp_path) == []
