"""All SQL on ``document_type``: a memory's custom document types.

Every method takes a connection inside ``Database.memory_transaction``; values travel as
parameters bound by name (:mod:`fortemi.platform.sql`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from fortemi.platform.database import Connection
from fortemi.platform.errors import Conflict
from fortemi.platform.sql import Query, Table

__all__ = ["DOCUMENT_TYPE", "DocumentTypeRepository", "StoredType"]


@dataclass(frozen=True, slots=True)
class StoredType:
    """A custom type's row: its definition (as :func:`parse_type` reads it) and who and
    when."""

    name: str
    category: str
    definition: dict[str, Any]
    created_by: str
    created_at: datetime
    updated_by: str
    updated_at: datetime


def _definition(value: Any) -> dict[str, Any]:
    return dict(value)  # the pool's codec has decoded the jsonb


DOCUMENT_TYPE = Table("document_type", StoredType, convert={"definition": _definition})

_LIST = DOCUMENT_TYPE.query("SELECT {columns} FROM document_type ORDER BY name")
_GET = DOCUMENT_TYPE.query("SELECT {columns} FROM document_type WHERE name = :name")
_INSERT = DOCUMENT_TYPE.query("""
INSERT INTO document_type (name, category, definition, created_by, updated_by)
VALUES (:name, :category, :definition::jsonb, :actor, :actor)
RETURNING {columns}
""")
_UPDATE = DOCUMENT_TYPE.query("""
UPDATE document_type
SET category = :category, definition = :definition::jsonb, updated_by = :actor,
    updated_at = now()
WHERE name = :name
RETURNING {columns}
""")
_DELETE = Query("DELETE FROM document_type WHERE name = :name RETURNING name")


class DocumentTypeRepository:
    async def list(self, conn: Connection) -> list[StoredType]:
        return [DOCUMENT_TYPE.from_record(r) for r in await conn.fetch(_LIST.sql)]

    async def get(self, conn: Connection, name: str) -> StoredType | None:
        row = await conn.fetchrow(_GET.sql, *_GET.args(name=name))
        return None if row is None else DOCUMENT_TYPE.from_record(row)

    async def insert(
        self, conn: Connection, name: str, category: str, definition: dict[str, Any], actor: str
    ) -> StoredType:
        args = _INSERT.args(name=name, category=category, definition=definition, actor=actor)
        try:
            row = await conn.fetchrow(_INSERT.sql, *args)
        except asyncpg.UniqueViolationError as exc:
            raise Conflict(
                f"This memory already has a document type {name!r}", reason="name_taken"
            ) from exc
        if row is None:  # INSERT ... RETURNING always returns the row it wrote
            raise RuntimeError("INSERT INTO document_type returned no row")
        return DOCUMENT_TYPE.from_record(row)

    async def update(
        self, conn: Connection, name: str, category: str, definition: dict[str, Any], actor: str
    ) -> StoredType | None:
        args = _UPDATE.args(name=name, category=category, definition=definition, actor=actor)
        row = await conn.fetchrow(_UPDATE.sql, *args)
        return None if row is None else DOCUMENT_TYPE.from_record(row)

    async def delete(self, conn: Connection, name: str) -> bool:
        return await conn.fetchval(_DELETE.sql, *_DELETE.args(name=name)) is not None
