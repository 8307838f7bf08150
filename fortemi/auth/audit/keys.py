"""The secret keys of the audit chain: the current one writes, retired ones still verify.

Every hash of the chain is a keyed BLAKE3 (:mod:`.chain`), so someone who can write the
database but does not hold the key cannot recompute a chain after editing it. Each key is
named in the log by its *key id*: the first 16 hex digits of the keyed BLAKE3 of a fixed
label, which identifies the key without revealing it. A segment records the id of the key
that chained it, so rotating the key is itself recorded in the (chained) segment registry,
and a log chained under several keys verifies as long as the keyring holds all of them.

The current key is ``FORTEMI_AUDIT_KEY`` (base64 of 32 bytes) when set, which every
replica and worker must share; otherwise a key file in the data directory, created on
first use. Retired keys come from ``FORTEMI_AUDIT_RETIRED_KEYS`` (comma-separated).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable
from pathlib import Path

from blake3 import blake3
from pydantic import SecretStr

from fortemi.platform import keyfiles
from fortemi.platform.settings import Settings

__all__ = ["KEY_BYTES", "AuditKeyring", "key_id"]

KEY_BYTES = 32
_KEY_ID_LABEL = b"fortemi-audit-key-id"
_KEY_ID_HEX = 16


def key_id(key: bytes) -> str:
    """The public name of ``key``: a keyed hash of a fixed label, never the key itself."""
    return blake3(_KEY_ID_LABEL, key=key).hexdigest()[:_KEY_ID_HEX]


def _decode(text: str, name: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{name} must be base64 of {KEY_BYTES} bytes") from exc
    if len(key) != KEY_BYTES:
        raise ValueError(f"{name} must decode to {KEY_BYTES} bytes, not {len(key)}")
    return key


class AuditKeyring:
    """The current key (which chains new segments) and every key that may verify old ones."""

    def __init__(self, current: bytes, retired: Iterable[bytes] = ()) -> None:
        keys = [current, *retired]
        for key in keys:
            if len(key) != KEY_BYTES:
                raise ValueError(f"an audit key is {KEY_BYTES} bytes, not {len(key)}")
        self._current = current
        self._keys = {key_id(key): key for key in keys}

    @classmethod
    def from_settings(cls, settings: Settings) -> AuditKeyring:
        """``FORTEMI_AUDIT_KEY`` (else the data directory's key file) and the retired keys.

        ValueError (a configuration error, before anything starts) for a key that is not
        base64 of 32 bytes.
        """
        current: bytes
        if settings.audit_key is not None:
            current = _decode(settings.audit_key.get_secret_value(), "FORTEMI_AUDIT_KEY")
        else:
            path = Path(settings.home) / "keys" / "audit.key"
            current = keyfiles.load_or_create(path, lambda: os.urandom(KEY_BYTES))
            if len(current) != KEY_BYTES:
                raise ValueError(f"{path} must hold exactly {KEY_BYTES} bytes")
        return cls(current, _retired(settings.audit_retired_keys))

    @property
    def current_id(self) -> str:
        return key_id(self._current)

    @property
    def current(self) -> bytes:
        return self._current

    def get(self, kid: str) -> bytes | None:
        """The key named ``kid``, or None if this keyring does not hold it."""
        return self._keys.get(kid)


def _retired(value: SecretStr | None) -> list[bytes]:
    if value is None:
        return []
    parts = [part for part in value.get_secret_value().split(",") if part.strip()]
    return [_decode(part, "FORTEMI_AUDIT_RETIRED_KEYS") for part in parts]
