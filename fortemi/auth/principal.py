"""The authenticated caller, as a typed value passed explicitly from the edge down."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who made the request, taken from a validated access token.

    ``groups``, ``roles`` and ``permissions`` are whatever the identity provider asserted
    under the configured claim names; what they allow is decided by policy, not here.
    """

    sub: str
    groups: frozenset[str]
    roles: frozenset[str]
    permissions: frozenset[str]
    issuer: str
    client_id: str | None  # azp
    token_id: str | None  # jti
    expires_at: datetime  # aware, UTC

    def __post_init__(self) -> None:
        # A naive datetime compares wrongly against aware ones, and only at runtime.
        if self.expires_at.tzinfo is None:
            raise ValueError("Principal.expires_at must be timezone-aware")

    def has_role(self, role: str) -> bool:
        return role in self.roles
