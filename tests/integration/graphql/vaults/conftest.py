"""The test vaults and the fixtures that sync them: a syncing principal, and a memory
where the homelab vault's projects and skills may be written before its own policies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import OPEN_POLICY

VAULTS = Path(__file__).resolve().parents[3] / "data" / "vaults"
HOMELAB = VAULTS / "homelab" / "vault"
FOAM = VAULTS / "foam-docs" / "vault"
SKILLS = ("SKILL-kubernetes-debugging", "SKILL-testing", "SKILL-private-debug")


@pytest.fixture
def syncer(issuer: LocalIssuer) -> str:
    """An administrator in every team of the fixture, holding the skill permissions."""
    return issuer.mint(
        "vault-bot",
        groups=["platform-team", "devops-team", "ml-team"],
        roles=["admin"],
        permissions=["skill:read", "skill:write"],
    )


@pytest.fixture
async def homelab_memory(runtime: Runtime, memory: str) -> AsyncIterator[str]:
    """The test memory, where the fixture's projects and SKILL-testing may be written
    before the vault's own policies (which state no write action) replace them."""
    for project in ("poimen", "rust-guide", "ai-infra"):
        await runtime.policies.put(
            "project", memory, project, {**OPEN_POLICY, "project": project}, actor="test"
        )
    await runtime.policies.put(
        "skill", None, "SKILL-testing", {**OPEN_POLICY, "skill": "SKILL-testing"}, actor="test"
    )
    yield memory
    # Skill policies are shared by every memory: the ones the sync stored go with the test.
    for skill in SKILLS:
        await runtime.policies.delete("skill", None, skill)
