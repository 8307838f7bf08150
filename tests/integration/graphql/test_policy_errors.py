"""A broken policy file never takes the server down, and operators can see it."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from pathlib import Path

import httpx

from fortemi.app import create_app
from fortemi.auth.policy import (
    CompositePolicyProvider,
    DatabasePolicyProvider,
    FilePolicyProvider,
    PolicyService,
    RedisCachedPolicyProvider,
)
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime


async def test_readyz_names_the_broken_file_line_and_field_and_stays_ready(
    runtime: Runtime, settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "policies"
    shutil.copytree(settings.policy_path, folder)
    broken = folder / "projects" / "broken" / "_access.yaml"
    broken.parent.mkdir()
    broken.write_text("version: 1\nproject: broken\naccess_level: grup\n")
    files, stored = FilePolicyProvider(folder), DatabasePolicyProvider(runtime.db)
    policies = PolicyService(
        files,
        stored,
        RedisCachedPolicyProvider(
            CompositePolicyProvider(files, stored),
            runtime.redis,
            key=f"test:policies:{uuid.uuid4().hex}",
        ),
    )
    await policies.reload()
    services = dataclasses.replace(runtime.services, policies=policies)
    app = create_app(dataclasses.replace(runtime, services=services))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        response = await client.get("/readyz")
    assert response.status_code == 200
    errors = response.json()["details"]["policies"]["errors"]
    assert len(errors) == 1
    assert "projects/broken/_access.yaml:3" in errors[0]
    assert "access_level" in errors[0]
