"""MMPKE01 addresses: ``mm:`` + Base58 (Bitcoin alphabet) of 25 bytes.

::

    version (1 byte, 0x01) || BLAKE3(public key)[:20] || checksum (4 bytes)
    checksum = BLAKE3(version || digest)[:4]

An address names a recipient without being its key: encrypting needs the public key, which
an address only identifies (a key file or a directory resolves it). Every way an address can
be wrong is refused with its own reason, before any key is looked up.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

import base58
import blake3

from fortemi.crypto.errors import InvalidAddress

__all__ = ["ADDRESS_PREFIX", "ADDRESS_VERSION", "Address"]

ADDRESS_PREFIX = "mm:"
ADDRESS_VERSION = 0x01
_DIGEST = 20
_CHECKSUM = 4
_LENGTH = 1 + _DIGEST + _CHECKSUM
# Longest Base58 text of 25 bytes is 35 characters: anything longer is refused before
# decoding, so a megabyte of "address" costs nothing.
_MAX_TEXT = 40


def _checksum(body: bytes) -> bytes:
    return blake3.blake3(body).digest()[:_CHECKSUM]


@dataclass(frozen=True, slots=True)
class Address:
    """A recipient's address; ``str(address)`` is its ``mm:`` text."""

    digest: bytes  # BLAKE3(public key)[:20]

    @classmethod
    def of_public_key(cls, public_key: bytes) -> Address:
        return cls(blake3.blake3(public_key).digest()[:_DIGEST])

    @classmethod
    def parse(cls, text: str) -> Address:
        """The address ``text`` spells, or :class:`InvalidAddress` saying what is wrong."""
        shown = text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."
        if not text.startswith(ADDRESS_PREFIX):
            raise InvalidAddress(
                "address_prefix", f"{shown!r} is not an address: addresses start with 'mm:'"
            )
        body = text[len(ADDRESS_PREFIX) :]
        if not body or len(body) > _MAX_TEXT:
            raise InvalidAddress(
                "address_length", f"{shown!r} is not an address: it is too short or too long"
            )
        bad = sorted({c for c in body if c not in _ALPHABET})
        if bad:
            raise InvalidAddress(
                "address_base58",
                f"{shown!r} is not an address: {''.join(bad)!r} is not Base58 "
                "(no 0, O, I or l; perhaps a character was mistyped)",
            )
        raw = base58.b58decode(body)
        if len(raw) != _LENGTH:
            raise InvalidAddress(
                "address_length",
                f"{shown!r} is not an address: it decodes to {len(raw)} bytes, not {_LENGTH}",
            )
        if raw[0] != ADDRESS_VERSION:
            raise InvalidAddress(
                "address_version",
                f"{shown!r} has address version {raw[0]}; this program reads version "
                f"{ADDRESS_VERSION}",
            )
        body_bytes, checksum = raw[:-_CHECKSUM], raw[-_CHECKSUM:]
        if not hmac.compare_digest(_checksum(body_bytes), checksum):
            raise InvalidAddress(
                "address_checksum",
                f"{shown!r} has a bad checksum: a character was mistyped or lost",
            )
        return cls(body_bytes[1:])

    def __str__(self) -> str:
        body = bytes([ADDRESS_VERSION]) + self.digest
        return ADDRESS_PREFIX + base58.b58encode(body + _checksum(body)).decode("ascii")


_ALPHABET = frozenset(base58.BITCOIN_ALPHABET.decode("ascii"))
