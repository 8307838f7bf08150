"""Hot reload: the watcher picks up edits to the policy folder, and refuses broken ones.

Waiting is a bounded loop: rewrite the file (in case the watcher was not yet watching when
it was first written), then poll the provider a bounded number of times. No assertion is
about how long anything took.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import redis.asyncio as redis

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import (
    AccessDecisionEngine,
    FilePolicyProvider,
    PolicyProvider,
    PolicySet,
    build_policy_service,
)
from fortemi.platform.database import Database
from tests.support.policies import FIXTURE_POLICIES
from tests.unit.policy.helpers import principal

ENGINE = AccessDecisionEngine()
ALICE = principal("alice", ["data-team"], ["viewer"])
POIMEN = Resource(ResourceType.PROJECT, "poimen", "default")
OPENED = "# now open to all\nproject: poimen\naccess_level: public\n"
BROKEN = "project: poimen\naccess_level: public\nrequired_role: [\n"


@contextlib.asynccontextmanager
async def watching(
    provider: FilePolicyProvider, on_reload: Callable[[PolicySet], object]
) -> AsyncIterator[None]:
    # Stopped through its event: a cancel can be lost in the watcher's worker thread.
    stop = asyncio.Event()
    task = asyncio.create_task(provider.watch(on_reload=on_reload, stop=stop))
    try:
        yield
    finally:
        stop.set()
        await task


async def edit_until(
    path: Path, text: str, provider: PolicyProvider, seen: Callable[[PolicySet], bool]
) -> PolicySet:
    for _ in range(40):
        await asyncio.to_thread(path.write_text, text)
        for _ in range(20):
            await asyncio.sleep(0.05)
            policies = await provider.snapshot()
            if seen(policies):
                return policies
    pytest.fail(f"the watcher never reloaded {path}")


def alice_reads_poimen(policies: PolicySet) -> bool:
    return ENGINE.decide(policies, ALICE, Action.READ, POIMEN).allowed


async def test_an_edit_takes_effect_without_a_restart_and_a_broken_one_is_refused(
    tree: Path,
) -> None:
    provider = FilePolicyProvider(tree)
    before = await provider.snapshot()
    assert not alice_reads_poimen(before)
    reloads: list[PolicySet] = []
    path = tree / "projects" / "poimen" / "_access.yaml"
    async with watching(provider, reloads.append):
        opened = await edit_until(path, OPENED, provider, alice_reads_poimen)
        assert opened.errors == ()
        assert opened.version != before.version

        refused = await edit_until(path, BROKEN, provider, lambda p: bool(p.errors))
        assert refused.version == opened.version  # the last good set stays in force
        assert alice_reads_poimen(refused)
        (error,) = refused.errors
        assert error.file == str(path)
        assert error.message.startswith("invalid YAML")
    assert reloads  # on_reload saw the reloads


async def test_a_new_file_and_a_removed_file_are_picked_up(tree: Path) -> None:
    provider = FilePolicyProvider(tree)
    await provider.snapshot()
    new = tree / "projects" / "atlas" / "_access.yaml"
    new.parent.mkdir()
    atlas = Resource(ResourceType.PROJECT, "atlas", "default")

    def atlas_open(policies: PolicySet) -> bool:
        return ENGINE.decide(policies, ALICE, Action.READ, atlas).allowed

    async with watching(provider, lambda _: None):
        await edit_until(new, "project: atlas\naccess_level: public\n", provider, atlas_open)
        new.unlink()
        for _ in range(200):
            await asyncio.sleep(0.05)
            if not atlas_open(await provider.snapshot()):
                break
        decision = ENGINE.decide(await provider.snapshot(), ALICE, Action.READ, atlas)
        assert decision.reason is Reason.NO_POLICY_DEFAULT_DENY


async def test_a_hot_reload_reaches_the_cached_production_provider(
    tree: Path, db: Database, redis_client: redis.Redis
) -> None:
    service = build_policy_service(tree, db, redis_client)
    assert not alice_reads_poimen(await service.snapshot())
    path = tree / "projects" / "poimen" / "_access.yaml"
    async with watching(service.files, lambda _: None):
        await edit_until(path, OPENED, service, alice_reads_poimen)


async def test_a_removed_and_recreated_folder_is_watched_again(tree: Path) -> None:
    provider = FilePolicyProvider(tree, debounce_ms=100, quiet_ms=200)
    good = await provider.snapshot()
    async with watching(provider, lambda _: None):
        await asyncio.to_thread(shutil.rmtree, tree)
        for _ in range(200):  # the last good set stays, with the reason
            await asyncio.sleep(0.05)
            if (await provider.snapshot()).errors:
                break
        gone = await provider.snapshot()
        assert gone.version == good.version
        assert [e.message for e in gone.errors] == ["the policy directory does not exist"]

        # Back, with poimen opened: picked up although the folder's old watch is dead.
        await asyncio.to_thread(shutil.copytree, FIXTURE_POLICIES, tree)
        path = tree / "projects" / "poimen" / "_access.yaml"
        back = await edit_until(path, OPENED, provider, alice_reads_poimen)
        assert back.errors == ()


async def _ends_after_stop(task: asyncio.Task[None], stop: asyncio.Event) -> bool:
    stop.set()
    for _ in range(200):  # bounded: a watch that ignores stop fails here, never hangs
        if task.done():
            return True
        await asyncio.sleep(0.05)
    task.cancel()
    return False


@pytest.mark.parametrize("folder", ["watched", "missing"])
async def test_setting_stop_ends_the_watch_on_its_own(tree: Path, folder: str) -> None:
    if folder == "missing":  # the watch is polling for the folder to come back
        shutil.rmtree(tree)
    provider = FilePolicyProvider(tree, debounce_ms=100, quiet_ms=200)
    stop = asyncio.Event()
    task = asyncio.create_task(provider.watch(stop=stop))
    for _ in range(10):  # let it arm (or start polling) first
        await asyncio.sleep(0.05)
    assert not task.done()
    assert await _ends_after_stop(task, stop)
    assert task.exception() is None  # ended, not cancelled or failed
