"""Encryption for named recipients, as the server offers it (``encryptFor: [address]``).

The server only ever holds public keys: it resolves each address through a
:class:`PublicKeyDirectory` and seals for the keys it found. Opening is for the
recipients' own machines (``fortemi pke decrypt``); nothing here takes a private key.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from typing import Protocol

from fortemi.crypto.addresses import Address
from fortemi.crypto.envelope import Sealer
from fortemi.crypto.header import MAX_RECIPIENTS, check_filename
from fortemi.crypto.keys import PublicKey
from fortemi.platform.errors import BadUserInput, NotFound

__all__ = ["EncryptionService", "PublicKeyDirectory", "StaticDirectory"]


class PublicKeyDirectory(Protocol):
    """Where the server finds the public key an address names."""

    async def public_key(self, address: Address) -> PublicKey | None: ...


class StaticDirectory:
    """A fixed set of public keys (configuration, tests)."""

    def __init__(self, keys: Iterable[PublicKey]) -> None:
        self._keys = {key.address: key for key in keys}

    async def public_key(self, address: Address) -> PublicKey | None:
        return self._keys.get(address)


class EncryptionService:
    """Seals bytes or streams for a list of ``mm:`` addresses."""

    def __init__(self, directory: PublicKeyDirectory) -> None:
        self._directory = directory

    async def recipients(self, addresses: Sequence[str]) -> list[PublicKey]:
        """The public keys of ``addresses`` (each once, in order).

        Raises :class:`~fortemi.crypto.errors.InvalidAddress` for a malformed address,
        :class:`NotFound` for one with no known key, ``BadUserInput`` for none or too many.
        """
        if not addresses:
            raise BadUserInput("Name at least one recipient address", reason="no_recipients")
        parsed = list(dict.fromkeys(Address.parse(text) for text in addresses))
        if len(parsed) > MAX_RECIPIENTS:
            raise BadUserInput(
                f"At most {MAX_RECIPIENTS} recipients per file", reason="too_many_recipients"
            )
        keys = []
        for address in parsed:
            key = await self._directory.public_key(address)
            if key is None:
                raise NotFound(
                    f"No public key is known for {address}: its owner must register it first"
                )
            keys.append(key)
        return keys

    async def sealer(self, addresses: Sequence[str], *, filename: str | None) -> Sealer:
        """A :class:`Sealer` for the addresses: write its ``preamble``, then ``update`` each
        block and ``finalize``; memory stays at one chunk whatever the size."""
        return Sealer(await self.recipients(addresses), filename=_filename(filename))

    async def encrypt(
        self, addresses: Sequence[str], data: bytes, *, filename: str | None
    ) -> bytes:
        sealer = await self.sealer(addresses, filename=filename)
        return sealer.preamble + sealer.update(data) + sealer.finalize()

    async def encrypt_stream(
        self, addresses: Sequence[str], blocks: AsyncIterable[bytes], *, filename: str | None
    ) -> AsyncIterator[bytes]:
        """The MMPKE01 file of ``blocks``, as blocks (for a streamed download or export).

        The recipients are resolved before the first block is read, so a bad address fails
        the request before anything is sent.
        """
        sealer = await self.sealer(addresses, filename=filename)
        return _stream(sealer, blocks)


async def _stream(sealer: Sealer, blocks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    yield sealer.preamble
    async for block in blocks:
        if out := sealer.update(block):
            yield out
    yield sealer.finalize()


def _filename(filename: str | None) -> str | None:
    try:
        return check_filename(filename)
    except (ValueError, UnicodeError):
        raise BadUserInput(
            "A filename to encrypt is 1 to 1024 characters of text, without NUL",
            reason="bad_filename",
        ) from None
