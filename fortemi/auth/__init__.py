"""Authentication: an OIDC bearer token in, a :class:`Principal` out.

The server trusts one issuer: an external OpenID Connect provider (``OIDC_ISSUER``, for
instance Authentik) or, when none is configured, the built-in :class:`LocalIssuer`. Both
are validated the same way, by a :class:`TokenValidator` over an :class:`OidcJwksSource`
that discovers the issuer's keys. Every failure is ``Unauthenticated``.
"""

from __future__ import annotations

import httpx

from fortemi.auth.local_issuer import LocalIssuer, parse_ttl
from fortemi.auth.oidc import JwksSource, OidcJwksSource, check_issuer_url
from fortemi.auth.principal import Principal
from fortemi.auth.tokens import TokenValidator, bearer_token
from fortemi.platform.settings import Settings

__all__ = [
    "JwksSource",
    "LocalIssuer",
    "OidcJwksSource",
    "Principal",
    "TokenValidator",
    "bearer_token",
    "build_token_validator",
    "check_issuer_url",
    "parse_ttl",
]


def build_token_validator(settings: Settings, client: httpx.AsyncClient) -> TokenValidator:
    """The validator for the configured issuer, fetching its keys through ``client``.

    ``client`` supplies the timeout (``oidc_http_timeout_seconds`` is the caller's to
    apply) and the transport: for the local issuer, an ``httpx.ASGITransport`` over the
    app serving :meth:`LocalIssuer.routes`. An external issuer's URL must be https, or
    http on loopback (else ValueError); the local issuer's may be any http URL (a server
    bound to 0.0.0.0, say), because its keys are then read in-process, never over a network.
    """
    jwks = OidcJwksSource(
        settings.issuer,
        client,
        cache_seconds=settings.oidc_jwks_cache_seconds,
        min_refresh_seconds=settings.oidc_jwks_min_refresh_seconds,
        enforce_https=not settings.uses_local_issuer,
    )
    return TokenValidator(settings, jwks)
