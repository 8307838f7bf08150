"""Policies stored in PostgreSQL (``public.access_policy``), set at runtime through the API.

A row is ``(resource_type, memory, name) -> document``: the same document a YAML file
holds, checked by the same validator before it is stored. ``memory`` NULL means "in every
memory"; shared skills are always stored so, and a memory's own policy is stored with
``memory = name``. Rows of a memory (its own policy, its projects' policies) go away with
their memory (``ON DELETE CASCADE``), so a memory re-created under an old name never
inherits its predecessor's rules.

Callers that run several replicas follow a write with
:meth:`RedisCachedPolicyProvider.invalidate` so every replica reloads.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from fortemi.auth.decision import ResourceType
from fortemi.auth.policy.model import Defaults, Policy, PolicyError
from fortemi.auth.policy.policyset import PolicySet
from fortemi.auth.policy.repository import delete_policy, get_policy, load_policies, put_policy
from fortemi.auth.policy.validation import (
    PolicyValidationError,
    check_resource_name,
    parse_policy,
)
from fortemi.platform.database import Connection, Database, validate_memory_name
from fortemi.platform.errors import BadUserInput, NotFound

__all__ = ["MAX_DOCUMENT_BYTES", "DatabasePolicyProvider", "StoredPolicy"]

log = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 256 * 1024
SOURCE = "database"
_STORABLE = (ResourceType.PROJECT, ResourceType.SKILL, ResourceType.MEMORY)


@dataclass(frozen=True, slots=True)
class StoredPolicy:
    policy: Policy
    document: dict[str, Any]  # as it was put
    updated_at: datetime
    updated_by: str


class DatabasePolicyProvider:
    """Reads and writes ``public.access_policy``. Writes mark the snapshot stale, so the
    next :meth:`snapshot` on this instance re-reads the table."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._current: PolicySet | None = None
        self._writes = 0  # bumped by every write; a load is current if none happened since
        self._loaded_at_write = -1
        self._lock = asyncio.Lock()

    async def snapshot(self) -> PolicySet:
        current = self._current
        if current is None or self._loaded_at_write != self._writes:
            return await self.reload()
        return current

    async def reload(self) -> PolicySet:
        async with self._lock:
            writes = self._writes
            async with self._db.shared_transaction() as conn:
                rows = await load_policies(conn)
            policies: list[Policy] = []
            errors: list[PolicyError] = []
            for row in rows:
                # Rows were validated when put; one that no longer validates (edited by
                # hand, or a stricter release) is left out, so its resource gets the default.
                try:
                    policies.append(_parse(row.resource_type, row.memory, row.name, row.document))
                except PolicyValidationError as exc:
                    errors.extend(exc.errors)
                    log.error("stored policy left out: %s", exc)
            self._current = PolicySet(Defaults.missing(), [policies], errors)
            self._loaded_at_write = writes
            return self._current

    async def get(
        self, resource_type: ResourceType | str, memory: str | None, name: str
    ) -> StoredPolicy | None:
        """The stored policy of a resource, with its document as put, or None."""
        resource_type = _resource_type(resource_type)
        memory = _normalize(resource_type, memory, name)
        async with self._db.shared_transaction() as conn:
            row = await get_policy(conn, resource_type.value, memory, name)
        if row is None:
            return None
        policy = _parse(resource_type.value, memory, name, row.document)
        return StoredPolicy(policy, row.document, row.updated_at, row.updated_by)

    def validate(
        self,
        resource_type: ResourceType | str,
        memory: str | None,
        name: str,
        document: dict[str, Any],
    ) -> Policy:
        """The policy ``document`` describes, without storing it; what :meth:`put` checks.

        Raises :class:`BadUserInput` naming the offending field (``document.<field>``
        for the document's own fields, in ``problems`` all of them).
        """
        type_ = _resource_type(resource_type)
        memory = _normalize(type_, memory, name)
        if not isinstance(document, dict):
            raise BadUserInput("A policy document is a JSON object", field="document")
        try:
            size = len(json.dumps(document, ensure_ascii=False, allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise BadUserInput("A policy document is plain JSON", field="document") from exc
        if size > MAX_DOCUMENT_BYTES:
            raise BadUserInput(
                f"A policy document is at most {MAX_DOCUMENT_BYTES} bytes; this one is {size}",
                field="document",
                limit=MAX_DOCUMENT_BYTES,
            )
        try:
            return _parse(type_.value, memory, name, document)
        except PolicyValidationError as exc:
            first = exc.errors[0]
            raise BadUserInput(
                "Invalid policy: " + "; ".join(_described(e) for e in exc.errors),
                field=f"document.{first.field}" if first.field else "document",
                problems=[{"field": e.field, "message": e.message} for e in exc.errors],
            ) from exc

    async def put(
        self,
        resource_type: ResourceType | str,
        memory: str | None,
        name: str,
        document: dict[str, Any],
        actor: str,
    ) -> Policy:
        """Validate ``document`` (as :meth:`validate`) and store it as the resource's
        policy, replacing any. Raises :class:`BadUserInput`, or :class:`NotFound` for an
        unknown memory.
        """
        async with self._db.shared_transaction() as conn:
            return await self.put_in(conn, resource_type, memory, name, document, actor)

    async def put_in(
        self,
        conn: Connection,
        resource_type: ResourceType | str,
        memory: str | None,
        name: str,
        document: dict[str, Any],
        actor: str,
    ) -> Policy:
        """:meth:`put` inside the caller's shared transaction ``conn``."""
        policy = self.validate(resource_type, memory, name, document)
        memory = policy.memory
        try:
            await put_policy(conn, policy.resource_type.value, memory, name, document, actor)
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound(f"Memory {memory!r} does not exist", memory=memory) from exc
        finally:
            self._writes += 1
        return policy

    async def delete(
        self, resource_type: ResourceType | str, memory: str | None, name: str
    ) -> bool:
        """Remove the resource's stored policy; False if there was none."""
        resource_type = _resource_type(resource_type)
        memory = _normalize(resource_type, memory, name)
        try:
            async with self._db.shared_transaction() as conn:
                deleted = await delete_policy(conn, resource_type.value, memory, name)
        finally:
            self._writes += 1
        return deleted


def _resource_type(value: ResourceType | str) -> ResourceType:
    try:
        return ResourceType(value)
    except ValueError:
        kinds = ", ".join(t.value for t in _STORABLE)
        raise BadUserInput(
            f"A stored policy is for a {kinds} (got {value!r})", field="resourceType"
        ) from None


def _normalize(resource_type: ResourceType, memory: str | None, name: str) -> str | None:
    """Check a resource's identity and return the memory column it is stored under."""
    if resource_type not in _STORABLE:
        raise BadUserInput(
            f"{resource_type.value} policies live in default.yaml, not in the database",
            field="resourceType",
        )
    problem = check_resource_name(resource_type, name)
    if problem is not None:
        raise BadUserInput(problem[0].upper() + problem[1:], field="name")
    if resource_type is ResourceType.SKILL and memory is not None:
        raise BadUserInput(
            "Skills are shared across memories: store a skill policy without a memory",
            field="memory",
        )
    if resource_type is ResourceType.MEMORY:
        if memory is not None and memory != name:
            raise BadUserInput(
                f"A memory's policy belongs to that memory ({name!r}), not to {memory!r}",
                field="memory",
            )
        return name  # scoped to itself, so the row goes away with the memory
    if memory is not None:
        try:
            validate_memory_name(memory)
        except BadUserInput as exc:
            raise BadUserInput(exc.message, field="memory") from exc
    return memory


def _parse(type_value: str, memory: str | None, name: str, document: object) -> Policy:
    resource_type = ResourceType(type_value)
    return parse_policy(
        document,
        resource_type=resource_type,
        name=name,
        memory=memory,
        source=SOURCE,
        file=f"database:{type_value}/{memory or '*'}/{name}",
        name_origin="name",
        require_identity=False,
    )


def _described(error: PolicyError) -> str:
    return error.message if error.field is None else f"{error.field}: {error.message}"
