"""All SQL for stored policies (``public.access_policy``).

A row's columns are the fields of :class:`PolicyRow`, declared once here
(:mod:`fortemi.platform.sql`); values are always bound by name. ``memory`` NULL means "in
every memory", so rows are matched with ``IS NOT DISTINCT FROM``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = ["POLICY", "PolicyRow", "delete_policy", "get_policy", "load_policies", "put_policy"]


@dataclass(frozen=True, slots=True)
class PolicyRow:
    resource_type: str
    memory: str | None
    name: str
    document: dict[str, Any]  # as it was put
    updated_at: datetime
    updated_by: str


POLICY = Table("public.access_policy", PolicyRow)

_ALL = POLICY.query("SELECT {columns} FROM public.access_policy")

_GET = POLICY.query("""
SELECT {columns} FROM public.access_policy
WHERE resource_type = :resource_type AND memory IS NOT DISTINCT FROM :memory AND name = :name
""")

_PUT = POLICY.insert(
    ("resource_type", "memory", "name", "document", "updated_by"),
    suffix="""
ON CONFLICT (resource_type, (coalesce(memory, '')), name) DO UPDATE
SET document = EXCLUDED.document, updated_by = EXCLUDED.updated_by, updated_at = now()""",
)

_DELETE = Query("""
DELETE FROM public.access_policy
WHERE resource_type = :resource_type AND memory IS NOT DISTINCT FROM :memory AND name = :name
""")


async def load_policies(conn: Connection) -> list[PolicyRow]:
    return POLICY.from_records(await conn.fetch(_ALL.sql))


async def get_policy(
    conn: Connection, resource_type: str, memory: str | None, name: str
) -> PolicyRow | None:
    args = _GET.args(resource_type=resource_type, memory=memory, name=name)
    row = await conn.fetchrow(_GET.sql, *args)
    return None if row is None else POLICY.from_record(row)


async def put_policy(
    conn: Connection,
    resource_type: str,
    memory: str | None,
    name: str,
    document: dict[str, Any],
    actor: str,
) -> None:
    """Store ``document`` as the resource's policy, replacing any (asyncpg's
    ForeignKeyViolationError for an unknown memory)."""
    args = _PUT.args(
        resource_type=resource_type, memory=memory, name=name, document=document, updated_by=actor
    )
    await conn.execute(_PUT.sql, *args)


async def delete_policy(
    conn: Connection, resource_type: str, memory: str | None, name: str
) -> bool:
    """Whether there was a stored policy to remove."""
    args = _DELETE.args(resource_type=resource_type, memory=memory, name=name)
    status = await conn.execute(_DELETE.sql, *args)
    return bool(status != "DELETE 0")
