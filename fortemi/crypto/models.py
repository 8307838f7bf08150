"""A public key as the server's directory holds it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["PublishedKey"]


@dataclass(frozen=True, slots=True)
class PublishedKey:
    address: str
    public_key: bytes
    owner: str
    label: str | None
    created_at: datetime
    revoked_at: datetime | None
