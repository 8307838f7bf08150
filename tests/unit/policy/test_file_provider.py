"""The file provider's reload rules: partial first load, then all-or-nothing reloads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import AccessDecisionEngine, FilePolicyProvider

from .helpers import FIXTURE_POLICIES, principal

ENGINE = AccessDecisionEngine()
DAVE = principal("dave", ["devops-team"], ["viewer"])
POIMEN = Resource(ResourceType.PROJECT, "poimen", "default")
BROKEN = "project: poimen\naccess_level: grup\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    directory = tmp_path / "policies"
    shutil.copytree(FIXTURE_POLICIES, directory)
    return directory


def poimen_file(tree: Path) -> Path:
    return tree / "projects" / "poimen" / "_access.yaml"


async def test_the_first_load_keeps_valid_files_and_reports_invalid_ones(tree: Path) -> None:
    poimen_file(tree).write_text(BROKEN)
    policies = await FilePolicyProvider(tree).snapshot()
    assert [e.field for e in policies.errors] == ["access_level"]
    # poimen falls back to the default; the other files are in force.
    assert (
        ENGINE.decide(policies, DAVE, Action.READ, POIMEN).reason is Reason.NO_POLICY_DEFAULT_DENY
    )
    skill = Resource(ResourceType.SKILL, "SKILL-private-debug", "default")
    assert ENGINE.decide(
        policies, principal(groups=["ml-team"], roles=["viewer"]), Action.READ, skill
    ).allowed


async def test_a_reload_with_any_invalid_file_keeps_the_last_good_set(tree: Path) -> None:
    provider = FilePolicyProvider(tree)
    good = await provider.snapshot()
    assert ENGINE.decide(good, DAVE, Action.READ, POIMEN).allowed
    # Open poimen to everyone in one file while another file is broken: neither applies.
    poimen_file(tree).write_text("project: poimen\naccess_level: public\n")
    (tree / "memories" / "default.yaml").write_text("memory: default\naccess_level: [\n")
    refused = await provider.reload()
    assert refused.version == good.version
    (error,) = refused.errors
    assert error.file == str(tree / "memories" / "default.yaml")
    assert error.message.startswith("invalid YAML")
    assert not ENGINE.decide(
        refused, principal("alice", ["data-team"], ["viewer"]), Action.READ, POIMEN
    ).allowed
    assert (await provider.snapshot()).errors == refused.errors


async def test_a_fixed_reload_takes_effect_and_clears_the_errors(tree: Path) -> None:
    provider = FilePolicyProvider(tree)
    good = await provider.snapshot()
    poimen_file(tree).write_text(BROKEN)
    assert (await provider.reload()).errors
    poimen_file(tree).write_text("project: poimen\naccess_level: public\n")
    fixed = await provider.reload()
    assert fixed.errors == ()
    assert fixed.version != good.version
    assert ENGINE.decide(
        fixed, principal("alice", ["data-team"], ["viewer"]), Action.READ, POIMEN
    ).allowed


async def test_an_unchanged_reload_keeps_the_same_set(tree: Path) -> None:
    provider = FilePolicyProvider(tree)
    first = await provider.snapshot()
    assert await provider.reload() is first


async def test_a_missing_directory_denies_everything_and_says_so(tmp_path: Path) -> None:
    policies = await FilePolicyProvider(tmp_path / "nowhere").snapshot()
    assert [e.message for e in policies.errors] == ["the policy directory does not exist"]
    admin = principal(roles=["admin"])
    decision = ENGINE.decide(policies, admin, Action.ADMIN, Resource.system())
    assert decision.reason is Reason.NO_POLICY_DEFAULT_DENY


async def test_a_missing_default_yaml_gives_an_empty_set(tree: Path) -> None:
    (tree / "default.yaml").unlink()
    policies = await FilePolicyProvider(tree).snapshot()
    assert list(policies.policies()) == []
    assert "without default.yaml every request is denied" in str(policies.errors[0])
    memory = ENGINE.decide(policies, DAVE, Action.READ, Resource.of_memory("default"))
    assert memory.reason is Reason.NO_POLICY_DEFAULT_DENY
    assert not ENGINE.decide(policies, DAVE, Action.READ, POIMEN).allowed


async def test_an_invalid_default_yaml_on_first_load_falls_back_to_deny(tree: Path) -> None:
    (tree / "default.yaml").write_text(
        "version: 1\ndefault: allow\nsystem: {access_level: public}\n"
    )
    policies = await FilePolicyProvider(tree).snapshot()
    assert [e.field for e in policies.errors] == ["audit"]
    assert policies.default_decision.value == "deny"
    assert ENGINE.decide(policies, DAVE, Action.READ, POIMEN).allowed  # valid files still apply
    assert not ENGINE.decide(
        policies, principal(roles=["admin"]), Action.READ, Resource.audit()
    ).allowed
