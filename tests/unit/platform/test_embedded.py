from __future__ import annotations

from pathlib import Path

from fortemi.platform.embedded import EmbeddedServices
from fortemi.platform.settings import Settings


def test_configured_services_are_used_and_nothing_is_started(tmp_path: Path) -> None:
    settings = Settings(
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
