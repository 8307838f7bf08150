"""``me``: the authenticated caller as the platform sees it."""

from __future__ import annotations

from datetime import datetime

import strawberry

from fortemi.auth.principal import Principal as PrincipalModel
from fortemi.graphql.context import Info

__all__ = ["Principal", "PrincipalQuery"]


@strawberry.type(description="The authenticated caller")
class Principal:
    sub: str
    groups: list[str]
    roles: list[str]
    permissions: list[str]
    issuer: str
    client_id: str | None
    expires_at: datetime

    @classmethod
    def from_model(cls, principal: PrincipalModel) -> Principal:
        return cls(
            sub=principal.sub,
            groups=sorted(principal.groups),
            roles=sorted(principal.roles),
            permissions=sorted(principal.permissions),
            issuer=principal.issuer,
            client_id=principal.client_id,
            expires_at=principal.expires_at,
        )


@strawberry.type
class PrincipalQuery:
    @strawberry.field(description="Who the bearer token says you are")
    def me(self, info: Info) -> Principal:
        return Principal.from_model(info.context.caller)
