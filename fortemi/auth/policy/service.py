"""The policy service: the set in force, and the writes that change it.

One object owns the three providers of the production wiring (files, database, the Redis
generation cache) and the rule that binds them: a write is announced to every replica
once it commits. Callers never reach a provider to write, so no caller can forget the
announcement; :meth:`PolicyService.put` and :meth:`PolicyService.delete` make it
themselves. A write that must share a transaction with another change (a new memory and
its policy) goes through :meth:`PolicyService.put_in`, whose caller announces after commit
(:class:`MemoryPolicies` does, for the memory service).

:func:`build_policy_service` is the one wiring: the server, the tests and the benchmarks
all build the service through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fortemi.auth.decision import ResourceType
from fortemi.auth.policy.cache import GenerationCounter, RedisCachedPolicyProvider
from fortemi.auth.policy.database_provider import DatabasePolicyProvider, StoredPolicy
from fortemi.auth.policy.model import Policy
from fortemi.auth.policy.policyset import PolicySet
from fortemi.auth.policy.providers import CompositePolicyProvider, FilePolicyProvider
from fortemi.platform.database import Connection, Database

__all__ = ["MemoryPolicies", "PolicyService", "build_policy_service"]


class PolicyService:
    """Reads the policy set in force; stores, removes and reloads policies everywhere.

    Every write that commits is followed by :meth:`invalidate` (write -> INCR -> reload,
    see :class:`RedisCachedPolicyProvider`), so every replica reads it.
    """

    def __init__(
        self,
        files: FilePolicyProvider,
        stored: DatabasePolicyProvider,
        cache: RedisCachedPolicyProvider,
    ) -> None:
        self.files = files
        self._stored = stored
        self._cache = cache

    async def snapshot(self) -> PolicySet:
        """The set in force (files and database merged, current across replicas)."""
        return await self._cache.snapshot()

    async def reload(self) -> PolicySet:
        """Re-read the sources in this process only."""
        return await self._cache.reload()

    async def invalidate(self) -> PolicySet:
        """Announce a change to every process and reload here; the set now in force."""
        return await self._cache.invalidate()

    async def get(
        self, resource_type: ResourceType | str, memory: str | None, name: str
    ) -> StoredPolicy | None:
        return await self._stored.get(resource_type, memory, name)

    def validate(
        self,
        resource_type: ResourceType | str,
        memory: str | None,
        name: str,
        document: dict[str, Any],
    ) -> Policy:
        """The policy ``document`` describes, or BAD_USER_INPUT naming the field."""
        return self._stored.validate(resource_type, memory, name, document)

    async def put(
        self,
        resource_type: ResourceType | str,
        memory: str | None,
        name: str,
        document: dict[str, Any],
        *,
        actor: str,
    ) -> PolicySet:
        """Store ``document`` as the resource's policy (BAD_USER_INPUT if invalid,
        NOT_FOUND for an unknown memory) and announce it; the set in force afterwards."""
        await self._stored.put(resource_type, memory, name, document, actor)
        return await self._cache.invalidate()

    async def put_in(
        self,
        conn: Connection,
        resource_type: ResourceType | str,
        memory: str | None,
        name: str,
        document: dict[str, Any],
        *,
        actor: str,
    ) -> Policy:
        """Store a policy inside the caller's transaction ``conn``; the caller calls
        :meth:`invalidate` once that transaction has ended (committed or not)."""
        return await self._stored.put_in(conn, resource_type, memory, name, document, actor)

    async def delete(
        self, resource_type: ResourceType | str, memory: str | None, name: str
    ) -> bool:
        """Remove the resource's stored policy and announce it; False if there was none."""
        removed = await self._stored.delete(resource_type, memory, name)
        await self._cache.invalidate()
        return removed

    def memory_policies(self) -> MemoryPolicies:
        """The seam through which the memory service writes a new memory's policy."""
        return MemoryPolicies(self)

    async def watch_files(self, stop: asyncio.Event) -> None:
        """Hot-reload the policy files until ``stop`` is set (see
        :meth:`FilePolicyProvider.watch`)."""
        await self.files.watch(stop=stop)


class MemoryPolicies:
    """A memory's own policy, for :class:`~fortemi.platform.memories.MemoryService`
    (it satisfies that service's ``MemoryPolicyStore``)."""

    def __init__(self, service: PolicyService) -> None:
        self._service = service

    def check(self, memory: str, document: Mapping[str, Any]) -> None:
        self._service.validate(ResourceType.MEMORY, memory, memory, dict(document))

    async def store(
        self, conn: Connection, memory: str, document: Mapping[str, Any], *, actor: str
    ) -> None:
        await self._service.put_in(
            conn, ResourceType.MEMORY, memory, memory, dict(document), actor=actor
        )

    async def changed(self) -> None:
        await self._service.invalidate()


def build_policy_service(
    directory: Path, db: Database, redis: GenerationCounter, *, refresh_seconds: float = 1.0
) -> PolicyService:
    """The production wiring: files and database merged, kept current through Redis.

    The owner runs :meth:`PolicyService.watch_files` as a task for hot reload.
    """
    files = FilePolicyProvider(directory)
    stored = DatabasePolicyProvider(db)
    cache = RedisCachedPolicyProvider(
        CompositePolicyProvider(files, stored), redis, refresh_seconds=refresh_seconds
    )
    return PolicyService(files, stored, cache)
