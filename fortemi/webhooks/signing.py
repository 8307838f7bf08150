"""Webhook signatures: what Fortemi sends and how a receiver checks it.

A delivery carries two headers::

    X-Fortemi-Timestamp: 1767225600
    X-Fortemi-Signature: sha256=<hex HMAC-SHA256(secret, b"1767225600." + body)>

The timestamp is inside the MAC so a captured delivery cannot be replayed later with a
fresh timestamp; receivers reject timestamps outside a tolerance window (five minutes by
default) and should also deduplicate on the event id for replays inside it.
The key is the subscription secret's UTF-8 bytes (:func:`new_secret` gives ASCII).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "new_secret",
    "sign",
    "signature_headers",
    "verify",
]

SIGNATURE_HEADER = "X-Fortemi-Signature"
TIMESTAMP_HEADER = "X-Fortemi-Timestamp"

_SCHEME = "sha256="
_MAX_TIMESTAMP_DIGITS = 12  # far beyond any real epoch second; bounds int() on hostile input


def new_secret() -> str:
    """A fresh, URL-safe signing secret with 256 bits of entropy."""
    return secrets.token_urlsafe(32)


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The ``X-Fortemi-Signature`` value for ``body`` sent at ``timestamp`` (epoch seconds)."""
    return _signature(secret, str(timestamp), body)


def _signature(secret: bytes, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return _SCHEME + mac.hexdigest()


def signature_headers(secret: bytes, timestamp: int, body: bytes) -> dict[str, str]:
    """Both signature headers, ready to merge into a delivery's headers."""
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: sign(secret, timestamp, body)}


def verify(
    secret: bytes,
    *,
    timestamp: str,
    signature: str,
    body: bytes,
    now: float,
    tolerance_seconds: float = 300,
) -> bool:
    """Whether ``signature`` is ours for ``body`` at ``timestamp``, and the timestamp is fresh.

    Takes the raw header values. False, never an exception, for anything malformed,
    for timestamps more than ``tolerance_seconds`` away from ``now`` in either direction
    (a clock skewed into the future is as suspect as a stale one), and for a wrong MAC.
    The MAC comparison is constant-time.
    """
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > _MAX_TIMESTAMP_DIGITS:
        return False
    sent_at = int(timestamp)
    if abs(now - sent_at) > tolerance_seconds:
        return False
    if not signature.isascii():
        return False
    # The MAC covers the header exactly as received, so verify it over that text.
    expected = _signature(secret, timestamp, body)
    return hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii"))
