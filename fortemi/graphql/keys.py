"""Public keys as clients see them: publish your own, look anyone's up, revoke your own.

Not memory-scoped: a key belongs to the principal who published it (``owner`` is the
token's ``sub``) and serves every memory's ``encryptFor``. Looking an address up needs
only a signed-in caller (the key is public and the address is its hash); a key someone
else owns answers revocation as NOT_FOUND, never FORBIDDEN, so ownership does not leak.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from fortemi.crypto.keys import PublicKey as PublicKeyModel
from fortemi.crypto.keys import public_key_file
from fortemi.crypto.models import PublishedKey
from fortemi.graphql.context import Info

__all__ = ["KeyMutation", "KeyQuery"]


@strawberry.type(name="PublicKey", description="A published MMPKE01 public key")
class PublicKeyRecord:
    address: str = strawberry.field(description="Its mm: address (what encryptFor names)")
    key_file: str = strawberry.field(
        description="The public key file, as `fortemi pke keygen` wrote it"
    )
    label: str | None
    created_at: datetime
    revoked_at: datetime | None
    owned_by_me: bool

    @classmethod
    def of(cls, key: PublishedKey, caller: str) -> PublicKeyRecord:
        return cls(
            address=key.address,
            key_file=public_key_file(PublicKeyModel(key.public_key)).decode("ascii"),
            label=key.label,
            created_at=key.created_at,
            revoked_at=key.revoked_at,
            owned_by_me=key.owner == caller,
        )


@strawberry.type
class KeyQuery:
    @strawberry.field(description="The live public key an mm: address names, or null")
    async def public_key(self, info: Info, address: str) -> PublicKeyRecord | None:
        found = await info.context.services.keys.lookup(address)
        return PublicKeyRecord.of(found, info.context.caller.sub) if found else None

    @strawberry.field(description="The keys you published, revoked ones included")
    async def my_public_keys(self, info: Info) -> list[PublicKeyRecord]:
        caller = info.context.caller.sub
        return [
            PublicKeyRecord.of(key, caller)
            for key in await info.context.services.keys.owned(caller)
        ]


@strawberry.type
class KeyMutation:
    @strawberry.mutation(
        description="Publish your public key file so others can encryptFor its address. "
        "Publishing it again updates its label (and lifts a revocation)"
    )
    async def publish_public_key(
        self, info: Info, key_file: str, label: str | None = None
    ) -> PublicKeyRecord:
        caller = info.context.caller.sub
        published = await info.context.services.keys.publish(caller, key_file, label)
        return PublicKeyRecord.of(published, caller)

    @strawberry.mutation(description="Stop your key from being used for new encryptions")
    async def revoke_public_key(self, info: Info, address: str) -> PublicKeyRecord:
        caller = info.context.caller.sub
        revoked = await info.context.services.keys.revoke(caller, address)
        return PublicKeyRecord.of(revoked, caller)
