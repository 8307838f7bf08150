"""Sealing secrets Fortemi must keep but never show again (webhook signing secrets).

AES-256-GCM from ``cryptography``, with a context (the owning row's id) as associated
data, so a sealed value copied onto another row does not open. The key is
``FORTEMI_SECRET_KEY`` (32 bytes, base64) when set, which every replica and worker of a
production deployment must share; otherwise a key file in the data directory, created on
first use, which the embedded default's server and workers share.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fortemi.platform import keyfiles
from fortemi.platform.settings import Settings

__all__ = ["SealingError", "SecretBox"]

_NONCE_BYTES = 12
_KEY_BYTES = 32
_VERSION = b"\x01"


class SealingError(Exception):
    """A sealed value that does not open: another key, another row, or tampering."""


class SecretBox:
    def __init__(self, key: bytes) -> None:
        if len(key) != _KEY_BYTES:
            raise ValueError(f"a secret key is {_KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        """The box for ``FORTEMI_SECRET_KEY``, else for the data directory's key file.

        ValueError (a configuration error, before anything starts) for a key that is not
        base64 of 32 bytes.
        """
        if settings.secret_key is not None:
            try:
                key = base64.b64decode(settings.secret_key.get_secret_value(), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValueError("FORTEMI_SECRET_KEY must be base64 (32 bytes)") from exc
            if len(key) != _KEY_BYTES:
                raise ValueError(f"FORTEMI_SECRET_KEY must decode to 32 bytes, not {len(key)}")
            return cls(key)
        path = Path(settings.home) / "keys" / "secret.key"
        key = keyfiles.load_or_create(path, lambda: os.urandom(_KEY_BYTES))
        if len(key) != _KEY_BYTES:
            raise ValueError(f"{path} must hold exactly {_KEY_BYTES} bytes")
        return cls(key)

    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return _VERSION + nonce + self._aead.encrypt(nonce, plaintext, context)

    def open(self, sealed: bytes, context: bytes) -> bytes:
        """The plaintext; SealingError if ``sealed`` was not sealed with this key for
        ``context``, or was altered."""
        if len(sealed) < 1 + _NONCE_BYTES or sealed[:1] != _VERSION:
            raise SealingError("not a sealed value of a known version")
        nonce, body = sealed[1 : 1 + _NONCE_BYTES], sealed[1 + _NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, body, context)
        except InvalidTag as exc:
            raise SealingError("the sealed value does not open with this key") from exc
