"""`fortemi serve` and `fortemi token` as a user runs them: real processes, real signals."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil
import pytest

from fortemi.auth.audit import AuditKeyring, AuditRecord, AuditWriter
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.migrations import Migrations
from tests.support.policies import FIXTURE_POLICIES
from tests.support.processes import alive, embedded_servers, server_pids, wait_gone


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(FORTEMI_HOME=str(home), FORTEMI_PORT=str(port), FORTEMI_LOG_LEVEL="WARNING")
    env.update(FORTEMI_POLICY_DIR=str(FIXTURE_POLICIES))  # never the user-edited ./policies
    return env


class Server:
    def __init__(self, home: Path, port: int) -> None:
        self.port = port
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fortemi", "serve"],
            env=_env(home, port),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.token = self._read_token()
        # Keep reading: a server that logs into a full pipe blocks on its next write.
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()

    def _read_token(self) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # ends when the process exits
            self.lines.append(line)
            if line.startswith("token: "):
                return line.removeprefix("token: ").strip()
        raise AssertionError("serve printed no token line:\n" + "".join(self.lines))

    def _read_rest(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def graphql(self, query: str, token: str | None = None) -> dict[str, object]:
        response = httpx.post(
            f"http://127.0.0.1:{self.port}/graphql",
            json={"query": query},
            headers={"Authorization": f"Bearer {token or self.token}"},
        )
        body: dict[str, object] = response.json()
        return body

    def children(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def stop(self, sig: signal.Signals) -> int:
        self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        finally:
            self._drain.join(timeout=60)
            if self.process.stdout:
                self.process.stdout.close()
        return code


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "fortemi-home"
    for process in embedded_servers(tmp_path):  # never leave servers behind a failed test
        process.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_both_servers_on_signal_and_a_restart_finds_the_notes(
    home: Path, sig: signal.Signals
) -> None:
    port = _free_port()
    first = Server(home, port)
    assert any(f"http://127.0.0.1:{port}/graphql" in line for line in first.lines)
    created = first.graphql('mutation { createNote(input: {title: "kept"}) { id } }')
    assert "errors" not in created, created
    pids = server_pids(home)
    assert set(pids) == {"postgres", "redis-server"}, pids
    assert first.stop(sig) == 0
    assert wait_gone(pids.values()) == [], f"serve left embedded servers running: {pids}"
    assert embedded_servers(home) == []

    second = Server(home, port)
    try:
        listed = second.graphql("{ notes { edges { node { title } } } }")
        assert listed == {"data": {"notes": {"edges": [{"node": {"title": "kept"}}]}}}
    finally:
        second.stop(signal.SIGTERM)
    assert embedded_servers(home) == []


def test_serve_killed_hard_starts_again_and_its_clean_stop_stops_both_servers(
    home: Path,
) -> None:
    port = _free_port()
    first = Server(home, port)
    created = first.graphql('mutation { createNote(input: {title: "kept"}) { id } }')
    assert "errors" not in created, created
    pids = server_pids(home)
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    assert all(alive(pid) for pid in pids.values()), "the servers outlive a killed serve"

    second = Server(home, port)
    listed = second.graphql("{ notes { edges { node { title } } } }")
    assert listed == {"data": {"notes": {"edges": [{"node": {"title": "kept"}}]}}}
    assert second.stop(signal.SIGTERM) == 0
    assert wait_gone(pids.values()) == [], f"serve left embedded servers running: {pids}"
    assert embedded_servers(home) == []


@pytest.mark.parametrize("server", ["redis-server", "postgres"])
def test_serve_starts_again_after_an_embedded_server_was_killed_hard(
    home: Path, server: str
) -> None:
    port = _free_port()
    first = Server(home, port)
    created = first.graphql('mutation { createNote(input: {title: "kept"}) { id } }')
    assert "errors" not in created, created
    killed = server_pids(home)[server]
    os.kill(killed, signal.SIGKILL)
    assert wait_gone([killed]) == []
    first.stop(signal.SIGTERM)  # its exit status is not the point: the next start is

    second = Server(home, port)
    try:
        listed = second.graphql("{ notes { edges { node { title } } } }")
        assert listed == {"data": {"notes": {"edges": [{"node": {"title": "kept"}}]}}}
        pids = server_pids(home)
        assert set(pids) == {"postgres", "redis-server"}, pids
    finally:
        second.stop(signal.SIGTERM)
    assert wait_gone(pids.values()) == []
    assert embedded_servers(home) == []


def test_serve_starts_again_after_it_and_both_servers_were_killed_hard(home: Path) -> None:
    # As after a power cut, or the out-of-memory killer taking all three: nothing ran its
    # shutdown, every pid file and socket file is left behind.
    port = _free_port()
    first = Server(home, port)
    created = first.graphql('mutation { createNote(input: {title: "kept"}) { id } }')
    assert "errors" not in created, created
    pids = server_pids(home)
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)
    assert wait_gone(pids.values()) == []

    second = Server(home, port)
    try:
        listed = second.graphql("{ notes { edges { node { title } } } }")
        assert listed == {"data": {"notes": {"edges": [{"node": {"title": "kept"}}]}}}
        restarted = server_pids(home)
        assert set(restarted) == {"postgres", "redis-server"}, restarted
    finally:
        second.stop(signal.SIGTERM)
    assert wait_gone(restarted.values()) == []
    assert embedded_servers(home) == []


def test_token_command_mints_a_token_the_server_accepts(home: Path) -> None:
    port = _free_port()
    server = Server(home, port)
    try:
        minted = subprocess.run(
            [
                sys.executable,
                "-m",
                "fortemi",
                "token",
                "--sub",
                "alice",
                "--group",
                "platform-team",
                "--role",
                "editor",
                "--permission",
                "memory:read",
                "--ttl",
                "10m",
            ],
            env=_env(home, port),
            capture_output=True,
            text=True,
            check=True,
        )
        token = minted.stdout.strip()
        # The token alone on stdout: three segments, one line.
        assert token.count(".") == 2
        assert "\n" not in token
        me = server.graphql("{ me { sub groups roles permissions } }", token=token)
        assert me == {
            "data": {
                "me": {
                    "sub": "alice",
                    "groups": ["platform-team"],
                    "roles": ["editor"],
                    "permissions": ["memory:read"],
                }
            }
        }
        forbidden = server.graphql('mutation { createMemory(name: "x") { name } }', token=token)
        assert "FORBIDDEN" in str(forbidden)
    finally:
        server.stop(signal.SIGTERM)


def test_token_command_refuses_bad_ttl(home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fortemi", "token", "--sub", "a", "--ttl", "forever"],
        env=_env(home, _free_port()),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "--ttl" in result.stderr
    assert result.stdout == ""


def test_migrate_command_applies_once_then_finds_nothing_to_do(home: Path) -> None:
    env = _env(home, _free_port())
    command = [sys.executable, "-m", "fortemi", "migrate"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    again = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    migrations = Migrations()
    assert f"shared: {len(migrations.shared)} migration(s) applied" in first.stdout
    assert "shared: 0 migration(s) applied" in again.stdout
    assert f"memories: all at template version {migrations.memory_version}" in again.stdout
    assert embedded_servers(home) == [], "migrate left embedded servers running"


async def test_audit_commands_verify_and_export_and_find_a_tampered_row(
    fresh_database: str, service_urls: ServiceUrls, tmp_path: Path
) -> None:
    db = await Database.connect(fresh_database, min_size=1, max_size=2)
    try:
        await Migrations().migrate_shared(db)
        key = os.urandom(32)
        async with AuditWriter(db, keyring=AuditKeyring(key)) as writer:
            entries = await writer.append([_record(i) for i in range(5)])
        env = {
            **_env(tmp_path / "home", _free_port()),
            "DATABASE_URL": fresh_database,
            "REDIS_URL": service_urls.redis,
            "FORTEMI_AUDIT_KEY": base64.b64encode(key).decode(),
        }
        command = [sys.executable, "-m", "fortemi", "audit"]
        code, out, err = await _run([*command, "verify"], env)
        assert code == 0, err
        assert "ok: 5 rows" in out
        code, out, err = await _run([*command, "export", "--format", "jsonl"], env)
        assert code == 0, err
        rows = [json.loads(line) for line in out.splitlines()]
        assert [row["chain_hash"] for row in rows] == [e.chain_hash for e in entries]

        tampered = entries[2].id
        await db.fetchval(
            "UPDATE public.rbac_audit_log SET decision = 'allow', reason = 'owner_group' "
            "WHERE id = $1 RETURNING id",
            tampered,
        )
        code, out, _ = await _run([*command, "verify"], env)
        assert code == 1
        assert f"BROKEN at row {tampered}" in out
    finally:
        await db.close()


async def _run(command: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


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


def test_serve_runs_a_bulk_purge_job_to_completion_in_process(home: Path) -> None:
    server = Server(home, _free_port())
    try:
        created = server.graphql('mutation { createNote(input: {title: "gone"}) { id } }')
        note_id = created["data"]["createNote"]["id"]  # type: ignore[index]
        server.graphql(f'mutation {{ deleteNote(id: "{note_id}") {{ id }} }}')
        job = server.graphql(f'mutation {{ purgeNotes(ids: ["{note_id}"]) {{ id status }} }}')
        job_id = job["data"]["purgeNotes"]["id"]  # type: ignore[index]
        status = None
        for _ in range(400):  # a bounded poll: the job runs on the in-process workers
            read = server.graphql(f'{{ job(id: "{job_id}") {{ status result }} }}')
            status = read["data"]["job"]["status"]  # type: ignore[index]
            if status in ("COMPLETED", "FAILED"):
                break
            time.sleep(0.05)
        assert status == "COMPLETED", read
        gone = server.graphql(f'{{ note(id: "{note_id}") {{ id }} }}')
        assert gone == {"data": {"note": None}}
    finally:
        server.stop(signal.SIGTERM)


def test_a_worker_attaches_to_a_running_serve_and_leaves_it_running(home: Path) -> None:
    port = _free_port()
    server = Server(home, port)
    try:
        worker = subprocess.Popen(
            [sys.executable, "-m", "fortemi", "worker", "--tier", "cpu", "--threads", "1"],
            env=_env(home, port),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        # A bounded wait for the worker to connect to the shared Redis.
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz").json()
        for _ in range(200):
            if worker.poll() is not None:
                break
            time.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        after = httpx.get(f"http://127.0.0.1:{port}/readyz").json()
        assert ready["checks"] == after["checks"] == {"postgres": "ok", "redis": "ok"}
        still = server.graphql('mutation { createNote(input: {title: "after worker"}) { title } }')
        assert still == {"data": {"createNote": {"title": "after worker"}}}
        pids = server_pids(home)
    finally:
        server.stop(signal.SIGTERM)
    assert wait_gone(pids.values()) == [], "serve, the last user, left servers running"
