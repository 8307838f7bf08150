"""The `fortemi` command at its edges, run as a user runs it: the installed console script."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import httpx
import psutil
import pytest

from fortemi.auth.audit import AuditKeyring, AuditRecord, AuditWriter
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.migrations import Migrations
from fortemi.platform.settings import Settings

# The script pip installed, as `make serve` runs it; not on PATH unless a venv is active.
FORTEMI = str(Path(sys.executable).parent / "fortemi")
CLOSED_PIPE_EXIT = 141


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(FORTEMI_HOME=str(home), FORTEMI_LOG_LEVEL="WARNING", **extra)
    return env


def _run(*args: str, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORTEMI, *args], env=_env(home, **extra), capture_output=True, text=True, check=False
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "fortemi-home"


def test_version_prints_the_installed_version(home: Path) -> None:
    result = _run("--version", home=home)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"fortemi {version('fortemi')}\n"


def test_help_describes_the_program_and_lists_its_commands(home: Path) -> None:
    result = _run("--help", home=home)
    assert result.returncode == 0, result.stderr
    assert "knowledge memory with a GraphQL API" in result.stdout
    for command in ("serve", "worker", "token", "migrate", "audit", "schema"):
        assert f"\n    {command} " in result.stdout, command
    # What the module says to its developers stays out of the user's help.
    assert "the edge where settings are built" not in result.stdout


def test_token_with_an_empty_subject_is_a_one_line_usage_error(home: Path) -> None:
    result = _run("token", "--sub", "", home=home)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert (
        result.stderr.splitlines()[-1] == "fortemi token: error: argument --sub: must not be empty"
    )


def test_out_of_range_port_is_a_one_line_usage_error(home: Path) -> None:
    result = _run("serve", "--port", "99999", home=home)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "fortemi serve: error: argument --port: 99999 is not a port number (1-65535)"
    )
    assert not (home / "postgres").exists(), "nothing should start on a usage error"


def test_invalid_setting_in_the_environment_is_named_without_a_pydantic_dump(
    home: Path,
) -> None:
    result = _run("token", "--sub", "alice", home=home, FORTEMI_PORT="99999")
    assert result.returncode == 1
    assert result.stderr == (
        "fortemi: invalid configuration:\n"
        "  FORTEMI_PORT: Input should be less than or equal to 65535\n"
    )


def test_output_into_a_closed_pipe_ends_quietly(home: Path) -> None:
    # The reader is gone before anything is written: `fortemi schema | true`.
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [FORTEMI, "schema"],
            env=_env(home),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert result.stderr == ""
    assert result.returncode == CLOSED_PIPE_EXIT


async def test_audit_export_into_a_pipe_closed_early_is_no_database_failure(
    fresh_database: str, service_urls: ServiceUrls, home: Path
) -> None:
    db = await Database.connect(fresh_database, min_size=1, max_size=2)
    try:
        await Migrations().migrate_shared(db)
        keyring = AuditKeyring.from_settings(Settings(home=home))
        async with AuditWriter(db, keyring=keyring) as writer:
            # Far more than the pipe and stdout buffers hold, so the export is still
            # writing, inside its database transaction, when the reader goes away.
            await writer.append([_record(i) for i in range(3000)])
    finally:
        await db.close()
    env = _env(home, DATABASE_URL=fresh_database, REDIS_URL=service_urls.redis)

    def export_then_close_after_three_lines() -> tuple[list[str], str, int]:
        # `fortemi audit export --format csv | head -3`
        process = subprocess.Popen(
            [FORTEMI, "audit", "export", "--format", "csv"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        lines = [process.stdout.readline() for _ in range(3)]
        process.stdout.close()
        errors = process.stderr.read()
        process.stderr.close()
        return lines, errors, process.wait(timeout=300)

    lines, errors, code = await asyncio.to_thread(export_then_close_after_three_lines)
    assert lines[0].startswith("id,"), lines
    assert "unavailable" not in errors
    assert errors == ""
    assert code == CLOSED_PIPE_EXIT


def _record(i: int) -> AuditRecord:
    return AuditRecord(
        at=datetime.now(UTC),
        user_id=f"user{i}",
        groups=("data-team",),
        resource_type="project",
        resource_name="poimen",
        memory="default",
        action="read",
        decision="deny",
        reason="not_in_allowed_groups",
        policy_version="v",
    )


class _Serve:
    """`fortemi serve` started by its console script, as `make serve` does."""

    def __init__(self, home: Path, port: int) -> None:
        self.port = port
        # A data directory relative to where serve runs, as `FORTEMI_HOME=.fortemi` is.
        home.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [FORTEMI, "serve"],
            env={**_env(home, FORTEMI_PORT=str(port)), "FORTEMI_HOME": home.name},
            cwd=home.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []

    def line_starting(self, prefix: str) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # ends when the process exits
            self.lines.append(line)
            if line.startswith(prefix):
                return line.removeprefix(prefix).strip()
        raise AssertionError(f"serve printed no {prefix!r} line:\n" + "".join(self.lines))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)
        if self.process.stdout:
            self.process.stdout.close()


@pytest.fixture
def serve(home: Path) -> Iterator[_Serve]:
    server = _Serve(home, _free_port())
    try:
        yield server
    finally:
        server.stop()
        # Never leave the embedded servers behind: PostgreSQL names the data directory on
        # its command line, Redis runs in it.
        for process in psutil.process_iter(["cmdline", "cwd"]):
            cmdline = " ".join(process.info["cmdline"] or [])
            inside = str(process.info["cwd"] or "").startswith(str(home))
            if inside or (str(home) in cmdline and "postgres" in cmdline):
                process.kill()


def test_the_mint_command_printed_by_serve_works_as_printed(serve: _Serve, tmp_path: Path) -> None:
    serve.line_starting("token: ")
    printed = serve.line_starting("mint more: ")
    # A fresh shell elsewhere: no virtualenv on PATH, no Fortemi settings in the environment.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    minted = subprocess.run(
        ["/bin/sh", "-c", printed],
        env={"PATH": "/usr/bin:/bin", "HOME": str(elsewhere)},
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=False,
    )
    assert minted.returncode == 0, f"{printed}\n{minted.stderr}"
    token = minted.stdout.strip()
    me = httpx.post(
        f"http://127.0.0.1:{serve.port}/graphql",
        json={"query": "{ me { sub groups roles } }"},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    example = shlex.split(printed)
    assert me == {
        "data": {
            "me": {
                "sub": example[example.index("--sub") + 1],
                "groups": [example[example.index("--group") + 1]],
                "roles": [example[example.index("--role") + 1]],
            }
        }
    }


def test_unreachable_database_is_one_line_not_a_traceback(home: Path) -> None:
    closed = f"postgresql://fortemi@127.0.0.1:{_free_port()}/fortemi"
    result = _run(
        "audit", "verify", home=home, DATABASE_URL=closed, REDIS_URL="redis://127.0.0.1:1"
    )
    assert result.returncode == 1
    assert result.stderr == "fortemi audit: Cannot connect to PostgreSQL: ConnectionRefusedError\n"
