"""Why a key, an address or an MMPKE01 file was refused, with a stable reason.

Every refusal is a :class:`~fortemi.platform.errors.BadUserInput` (``BAD_USER_INPUT``) whose
``reason`` (``extensions.reason`` in GraphQL, the last word of the CLI's message) names the
check that failed, so a client can tell a typo in an address from a damaged file::

    PkeError                      reason
    ├── InvalidAddress            address_prefix | address_base58 | address_length |
    │                             address_version | address_checksum
    ├── InvalidKeyFile            key_file_malformed | key_file_mismatch | key_file_cost
    ├── WrongPassphrase           wrong_passphrase
    ├── WeakPassphrase            passphrase_too_short | passphrase_mismatch
    ├── NotARecipient             not_a_recipient
    ├── MalformedFile             bad_magic | truncated | header_too_large |
    │                             header_malformed | header_not_canonical |
    │                             unsupported_version
    └── IntegrityError            integrity

Foreign exceptions (``cryptography.exceptions.InvalidTag``, ``argon2`` errors, ``ValueError``
from Base58 or Base64) are translated into these where the library is called, once.
"""

from __future__ import annotations

from typing import Literal

from fortemi.platform.errors import BadUserInput

__all__ = [
    "IntegrityError",
    "InvalidAddress",
    "InvalidKeyFile",
    "MalformedFile",
    "NotARecipient",
    "PkeError",
    "Reason",
    "WeakPassphrase",
    "WrongPassphrase",
]

Reason = Literal[
    "address_prefix",
    "address_base58",
    "address_length",
    "address_version",
    "address_checksum",
    "key_file_malformed",
    "key_file_mismatch",
    "key_file_cost",
    "wrong_passphrase",
    "passphrase_too_short",
    "passphrase_mismatch",
    "not_a_recipient",
    "bad_magic",
    "truncated",
    "header_too_large",
    "header_malformed",
    "header_not_canonical",
    "unsupported_version",
    "integrity",
]


class PkeError(BadUserInput):
    """A refusal of the MMPKE01 format or its keys; ``reason`` is stable, the message human."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message, reason=reason)
        self.reason: Reason = reason


class InvalidAddress(PkeError):
    pass


class InvalidKeyFile(PkeError):
    pass


class WrongPassphrase(PkeError):
    def __init__(self) -> None:
        super().__init__(
            "wrong_passphrase",
            "The passphrase does not open this key file (or the file was changed)",
        )


class WeakPassphrase(PkeError):
    pass


class NotARecipient(PkeError):
    pass


class MalformedFile(PkeError):
    pass


class IntegrityError(PkeError):
    """Authentication failed: the file was changed, truncated or reordered after sealing."""

    def __init__(self, where: str) -> None:
        super().__init__(
            "integrity",
            f"The file failed its integrity check ({where}): it was changed, truncated or "
            "damaged after it was encrypted; nothing of it was decrypted",
        )
