from __future__ import annotations

from pathlib import Path

from fortemi.platform.embedded import EmbeddedServices, postgres_tuning
from tests.support.settings import settings_with


def test_configured_services_are_used_and_nothing_is_started(tmp_path: Path) -> None:
    settings = settings_with(
        home=tmp_path,
        DATABASE_URL="postgresql://db.example:5432/fortemi",
        REDIS_URL="redis://cache.example:6379/0",
    )
    services = EmbeddedServices(tmp_path)
    urls = services.start(settings)
    assert urls.database == "postgresql://db.example:5432/fortemi"
    assert urls.redis == "redis://cache.example:6379/0"
    assert not (tmp_path / "postgres").exists()
    assert not (tmp_path / "redis").exists()
    services.stop()  # stops nothing, raises nothing


def test_postgres_tuning_scales_with_memory_within_bounds() -> None:
    small = postgres_tuning(1 * 2**30)
    large = postgres_tuning(64 * 2**30)
    assert small["shared_buffers"] == "256MB"
    assert large["shared_buffers"] == "1024MB"  # capped: the app shares the machine
    assert postgres_tuning(256 * 2**20)["shared_buffers"] == "128MB"  # never below initdb's
    assert large["effective_cache_size"] == "32768MB"
    assert small["jit"] == large["jit"] == "off"
