"""The server's directory of published public keys: what ``encryptFor`` resolves against.

Users publish their *public* key file (``fortemi pke keygen`` writes it); the directory
keeps it under its ``mm:`` address with the publishing principal as owner. Anyone signed
in may look an address up (a public key is public, and the address is its hash); only the
owner sees the list of their keys or revokes one. A revoked key is kept but no longer
found, so nothing new is encrypted for it.

Errors: :class:`~fortemi.crypto.errors.InvalidKeyFile` and
:class:`~fortemi.crypto.errors.InvalidAddress` (both BAD_USER_INPUT) for malformed input,
Conflict when the key was published by someone else or the owner has too many live keys,
NotFound for an address the caller does not own (revoking) or nobody published.
"""

from __future__ import annotations

from fortemi.crypto.addresses import Address
from fortemi.crypto.keys import PublicKey, parse_public_key
from fortemi.crypto.models import PublishedKey
from fortemi.crypto.repository import KeyRepository
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound

__all__ = ["MAX_LABEL", "MAX_LIVE_KEYS", "KeyDirectory"]

MAX_LIVE_KEYS = 20  # per owner: enough for every device and a rotation, not a key store
MAX_LABEL = 200
_MAX_KEY_FILE = 4096  # a public key file is about 150 bytes


class KeyDirectory:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._repo = KeyRepository()

    async def publish(self, owner: str, key_file: str, label: str | None) -> PublishedKey:
        """Publish the public key in ``key_file`` (the text of a ``.pub`` key file)."""
        data = key_file.encode("utf-8", "surrogatepass")
        if len(data) > _MAX_KEY_FILE:
            raise BadUserInput(
                "That is not a public key file: they are a few hundred bytes of JSON",
                reason="key_file_too_large",
            )
        if label is not None and len(label) > MAX_LABEL:
            raise BadUserInput(
                f"A key's label is at most {MAX_LABEL} characters", reason="label_too_long"
            )
        public = parse_public_key(data)
        address = str(public.address)
        async with self._db.shared_transaction(subject=f"Public key {address}") as conn:
            existing = await self._repo.get(conn, address)
            if existing is None or existing.revoked_at is not None:
                if await self._repo.live_count(conn, owner) >= MAX_LIVE_KEYS:
                    raise Conflict(
                        f"You have {MAX_LIVE_KEYS} published keys: revoke one first",
                        reason="too_many_keys",
                    )
            published = await self._repo.publish(conn, address, public.raw, owner, label)
        if published is None:
            raise Conflict(
                f"{address} was published by another principal", reason="key_owned_elsewhere"
            )
        return published

    async def revoke(self, owner: str, address: str) -> PublishedKey:
        parsed = str(Address.parse(address))
        async with self._db.shared_transaction(subject=f"Public key {parsed}") as conn:
            revoked = await self._repo.revoke(conn, parsed, owner)
        if revoked is None:  # someone else's key answers as absent: no ownership leak
            raise NotFound(f"You have published no key {parsed}", address=parsed)
        return revoked

    async def owned(self, owner: str) -> list[PublishedKey]:
        async with self._db.shared_transaction() as conn:
            return await self._repo.owned(conn, owner)

    async def lookup(self, address: str) -> PublishedKey | None:
        """The live key ``address`` names, or None; InvalidAddress when it is malformed."""
        return await self.public_key_record(Address.parse(address))

    async def public_key_record(self, address: Address) -> PublishedKey | None:
        async with self._db.shared_transaction() as conn:
            found = await self._repo.get(conn, str(address))
        return found if found is not None and found.revoked_at is None else None

    async def public_key(self, address: Address) -> PublicKey | None:
        """:class:`~fortemi.crypto.service.PublicKeyDirectory`: what encryptFor resolves."""
        found = await self.public_key_record(address)
        return PublicKey(found.public_key) if found is not None else None
