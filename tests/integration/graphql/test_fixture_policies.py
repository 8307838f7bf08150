"""The suite decides with its own policies, never with the user-editable ./policies."""

from __future__ import annotations

from pathlib import Path

from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime
from tests.support.policies import FIXTURE_POLICIES

USER_EDITABLE = Path(__file__).resolve().parents[3] / "policies"


def test_the_session_settings_point_at_the_fixture_policies(settings: Settings) -> None:
    assert settings.policy_path == FIXTURE_POLICIES
    assert FIXTURE_POLICIES.resolve() != USER_EDITABLE.resolve()
    assert (FIXTURE_POLICIES / "default.yaml").is_file()


async def test_the_runtime_reads_and_watches_the_fixture_policies(runtime: Runtime) -> None:
    assert runtime.policies.files.directory == FIXTURE_POLICIES
    policies = await runtime.policies.files.snapshot()
    assert policies.errors == ()
    assert {info.source for info in policies.infos()} >= {
        "file:default.yaml",
        "file:projects/poimen/_access.yaml",
    }
