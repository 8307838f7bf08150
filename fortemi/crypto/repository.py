"""SQL for the public key directory (``public.public_key``)."""

from __future__ import annotations

import builtins

from fortemi.crypto.models import PublishedKey
from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = ["KeyRepository"]

KEY = Table("public.public_key", PublishedKey)

# A key published again by its owner is the same row (its label updated, a revocation
# lifted): publishing is idempotent. Another owner's row is left alone and not returned.
_PUBLISH = KEY.query("""
INSERT INTO public.public_key (address, public_key, owner, label)
VALUES (:address, :public_key, :owner, :label)
ON CONFLICT (address) DO UPDATE
    SET label = EXCLUDED.label, revoked_at = NULL
    WHERE public_key.owner = EXCLUDED.owner
RETURNING {columns}
""")
_GET = KEY.query("SELECT {columns} FROM public.public_key WHERE address = :address")
_OWNED = KEY.query("""
SELECT {columns} FROM public.public_key WHERE owner = :owner
ORDER BY created_at, address
""")
_COUNT_LIVE = Query(
    "SELECT count(*) FROM public.public_key WHERE owner = :owner AND revoked_at IS NULL"
)
_REVOKE = KEY.query("""
UPDATE public.public_key SET revoked_at = coalesce(revoked_at, now())
WHERE address = :address AND owner = :owner
RETURNING {columns}
""")


class KeyRepository:
    async def publish(
        self, conn: Connection, address: str, public_key: bytes, owner: str, label: str | None
    ) -> PublishedKey | None:
        """The owner's row for ``address``, or None when another owner published it."""
        args = _PUBLISH.args(address=address, public_key=public_key, owner=owner, label=label)
        row = await conn.fetchrow(_PUBLISH.sql, *args)
        return KEY.from_record(row) if row else None

    async def get(self, conn: Connection, address: str) -> PublishedKey | None:
        row = await conn.fetchrow(_GET.sql, *_GET.args(address=address))
        return KEY.from_record(row) if row else None

    async def owned(self, conn: Connection, owner: str) -> builtins.list[PublishedKey]:
        return KEY.from_records(await conn.fetch(_OWNED.sql, *_OWNED.args(owner=owner)))

    async def live_count(self, conn: Connection, owner: str) -> int:
        return int(await conn.fetchval(_COUNT_LIVE.sql, *_COUNT_LIVE.args(owner=owner)))

    async def revoke(self, conn: Connection, address: str, owner: str) -> PublishedKey | None:
        row = await conn.fetchrow(_REVOKE.sql, *_REVOKE.args(address=address, owner=owner))
        return KEY.from_record(row) if row else None
