"""The embedded PostgreSQL runs with settings sized for the machine from its first start."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg

from fortemi.platform.embedded import TUNING_FILE, EmbeddedServices
from tests.support.settings import settings_with


async def test_a_new_embedded_server_starts_with_its_tuning_in_force(tmp_path: Path) -> None:
    settings = settings_with(home=tmp_path, REDIS_URL="redis://unused.invalid:6379/0")
    services = EmbeddedServices(tmp_path)
    urls = services.start(settings)
    try:
        conn = await asyncpg.connect(urls.database)
        try:
            # In 8 kB pages. shared_buffers changes only on a restart, so a value other
            # than initdb's 128 MB proves the server was restarted with the file.
            pages = int(
                await conn.fetchval("SELECT setting FROM pg_settings WHERE name = 'shared_buffers'")
            )
            jit = await conn.fetchval("SHOW jit")
        finally:
            await conn.close()
        written = (tmp_path / "postgres" / TUNING_FILE).read_text()
        found = re.search(r"shared_buffers = '(\d+)MB'", written)
        assert found is not None
        assert pages * 8192 == int(found.group(1)) * 2**20 != 128 * 2**20
        assert jit == "off"
    finally:
        services.stop()
