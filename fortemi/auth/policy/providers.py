"""Policy providers: where the set in force comes from, and how it changes without a restart.

* :class:`FilePolicyProvider` reads the YAML directory and, while :meth:`~FilePolicyProvider.watch`
  runs, reloads it on every change (hot reload).
* :class:`~fortemi.auth.policy.database_provider.DatabasePolicyProvider` reads
  ``public.access_policy``.
* :class:`CompositePolicyProvider` merges them: ``default.yaml`` from the files; for the
  same resource, a file policy beats a database policy.
* :class:`~fortemi.auth.policy.cache.RedisCachedPolicyProvider` makes every replica notice
  a change made on another one.

Every provider hands out immutable :class:`PolicySet` values and swaps them whole, so a
request never sees half of a reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import watchfiles

from fortemi.auth.policy.database_provider import DatabasePolicyProvider
from fortemi.auth.policy.loader import DirectoryContents, load_policy_directory
from fortemi.auth.policy.model import Defaults
from fortemi.auth.policy.policyset import PolicySet
from fortemi.platform.metrics import POLICY_RELOADS

__all__ = ["CompositePolicyProvider", "FilePolicyProvider", "PolicyProvider"]

log = logging.getLogger(__name__)


class PolicyProvider(Protocol):
    async def snapshot(self) -> PolicySet:
        """The set in force now; cheap (no I/O once loaded)."""

    async def reload(self) -> PolicySet:
        """Re-read the source(s) now and return the set in force afterwards."""


class FilePolicyProvider:
    """The policies of one directory.

    The first load keeps every valid file and records the invalid ones (their resources
    fall back to the default decision). After that, a reload that finds ANY error keeps
    the last set in force and only records the errors (``snapshot().errors``): a half-
    edited file must never open or close access on its own. A missing directory or
    ``default.yaml`` gives an empty set that denies everything, with an error saying so.
    """

    def __init__(self, directory: Path, *, debounce_ms: int = 1600, quiet_ms: int = 5000) -> None:
        self.directory = directory
        self._debounce_ms = debounce_ms  # longest a burst of changes is gathered into one
        self._quiet_ms = quiet_ms
        self._current: PolicySet | None = None
        self._lock = asyncio.Lock()  # one load at a time, so an older read never lands last

    async def snapshot(self) -> PolicySet:
        current = self._current
        return current if current is not None else await self.reload()

    async def reload(self) -> PolicySet:
        async with self._lock:
            contents = await asyncio.to_thread(load_policy_directory, self.directory)
            current = self._current
            if current is None:
                current = _first_set(contents)
                for error in contents.errors:
                    log.error("policy file left out: %s", error)
            elif contents.errors:
                current = current.with_errors(contents.errors)
                log.error(
                    "policy reload refused, version %s stays in force: %s",
                    current.version[:12],
                    "; ".join(str(e) for e in contents.errors),
                )
            else:
                fresh = PolicySet(contents.defaults or Defaults.missing(), [contents.policies])
                # Same content and nothing to report: keep the very object, so caches
                # keyed on it (the composite's merge) stay warm.
                if fresh.version != current.version or current.errors:
                    current = fresh
            self._current = current
            return current

    async def watch(
        self,
        *,
        on_reload: Callable[[PolicySet], object] | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        """Reload whenever a file under the directory changes, until ``stop`` is set.

        ``on_reload`` (if given) is called with the set in force after each reload. A
        reload that fails unexpectedly is logged and the watch goes on.

        Each time the watch is armed (at start, and when the directory comes back after
        being removed: an inotify watch does not survive its directory) it reloads once
        more after ``quiet_ms`` without changes, because whatever changed between the
        last read and the arming raised no event.

        Stop it by setting ``stop``: the file watcher waits in a worker thread, which
        polls ``stop`` every 50 ms and returns, so the watch ends on its own and nothing
        is left running. A cancel has to reach through anyio's wait on that thread
        instead, and closes that relied on it were seen to hang intermittently.
        """
        stop = stop or asyncio.Event()
        await self.snapshot()
        while not stop.is_set():
            # A folder appearing fires no event we could wait on: poll for it.
            if not self.directory.is_dir():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._debounce_ms / 1000)
                continue
            unseen = True  # changes may have landed before the watch was armed
            async for changes in watchfiles.awatch(
                self.directory,
                debounce=self._debounce_ms,
                rust_timeout=self._quiet_ms,
                yield_on_timeout=True,  # an empty batch: armed, and quiet for quiet_ms
                stop_event=stop,
            ):
                if changes or unseen:
                    unseen = False
                    log.info("policy files changed (%d), reloading", len(changes))
                    await self._reload_after_change(on_reload)
                if not self.directory.is_dir():
                    break

    async def _reload_after_change(self, on_reload: Callable[[PolicySet], object] | None) -> None:
        try:
            policies = await self.reload()
        except Exception:
            POLICY_RELOADS.labels("file_change", "error").inc()
            log.exception("policy reload failed; the previous set stays in force")
            return
        POLICY_RELOADS.labels("file_change", "ok").inc()
        if on_reload is not None:
            on_reload(policies)


def _first_set(contents: DirectoryContents) -> PolicySet:
    if not contents.found_defaults_file:
        # Probably the wrong directory altogether: trust none of it.
        return PolicySet(Defaults.missing(), [], contents.errors)
    defaults = contents.defaults or Defaults.missing()
    return PolicySet(defaults, [contents.policies], contents.errors)


class CompositePolicyProvider:
    """Files first, then the database: ``default.yaml`` comes from the files, and a file
    policy for a resource overrides every database policy for it (``infos()`` records
    which won and what it overrode). Errors of both sources are reported together.
    """

    def __init__(self, file: FilePolicyProvider, database: DatabasePolicyProvider) -> None:
        self.file = file
        self.database = database
        self._merged: tuple[PolicySet, PolicySet, PolicySet] | None = None

    async def snapshot(self) -> PolicySet:
        return self._merge(await self.file.snapshot(), await self.database.snapshot())

    async def reload(self) -> PolicySet:
        files, stored = await asyncio.gather(self.file.reload(), self.database.reload())
        return self._merge(files, stored)

    def _merge(self, files: PolicySet, stored: PolicySet) -> PolicySet:
        # Merging 1,000 policies costs a millisecond: do it once per pair of inputs.
        merged = self._merged
        if merged is not None and merged[0] is files and merged[1] is stored:
            return merged[2]
        result = PolicySet(
            files.defaults,
            [list(files.policies()), list(stored.policies())],
            [*files.errors, *stored.errors],
        )
        self._merged = (files, stored, result)
        return result
