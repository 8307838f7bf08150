"""The built-in issuer, for installations without an external identity provider.

It holds one EC P-256 key in ``<home>/issuer/signing-key.pem`` and mints ES256 access
tokens shaped as RFC 9068 describes. It publishes a discovery document and key set, so its
tokens are validated by the same path as an external provider's: discovery, JWKS, and
:class:`~fortemi.auth.tokens.TokenValidator`. The discovery document serves verifiers
only; there is no authorization endpoint (tokens are minted by the ``token`` command).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import jwt
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from fortemi.auth.oidc import DISCOVERY_PATH
from fortemi.platform import keyfiles

__all__ = ["MAX_TTL", "LocalIssuer", "parse_ttl"]

MAX_TTL = timedelta(days=30)
JWKS_PATH = "/.well-known/jwks.json"
_TTL = re.compile(r"([0-9]{1,9})([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_CACHE_HEADERS = {"Cache-Control": "public, max-age=300"}
_CLAIMS = "iss sub aud exp iat nbf jti azp client_id groups roles permissions".split()


def parse_ttl(text: str) -> timedelta:
    """A token lifetime written as ``90s``, ``15m``, ``1h`` or ``7d``.

    Raises ValueError on anything else, on zero, and beyond :data:`MAX_TTL`: a bearer
    token cannot be revoked, so its lifetime is what bounds a leak.
    """
    match = _TTL.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a lifetime such as 90s, 15m, 1h or 7d")
    seconds = int(match[1]) * _UNIT_SECONDS[match[2]]
    if seconds == 0:
        raise ValueError("a token lifetime must be positive")
    if seconds > MAX_TTL.total_seconds():
        raise ValueError(f"{text!r} is longer than the {MAX_TTL.days}-day maximum")
    return timedelta(seconds=seconds)


class LocalIssuer:
    """Mints and publishes the keys of tokens for ``issuer``, intended for ``audience``."""

    def __init__(self, key: ec.EllipticCurvePrivateKey, issuer: str, audience: str) -> None:
        if not isinstance(key.curve, ec.SECP256R1):
            raise ValueError("the local issuer signs with ES256, which needs a P-256 key")
        self._key = key
        self.issuer = issuer
        self.audience = audience
        self.kid = _thumbprint(self._public_members())

    @classmethod
    def load_or_create(cls, home: Path, issuer: str, audience: str) -> LocalIssuer:
        """The issuer whose key is ``home/issuer/signing-key.pem``, created (0600, in a
        0700 directory) on first use and reused after, so tokens outlive restarts."""
        return cls(_load_or_create_key(home / "issuer" / "signing-key.pem"), issuer, audience)

    def mint(
        self,
        sub: str,
        *,
        groups: Sequence[str] = (),
        roles: Sequence[str] = (),
        permissions: Sequence[str] = (),
        ttl: timedelta = timedelta(hours=1),
        client_id: str = "fortemi-cli",
    ) -> str:
        """A signed access token for ``sub``, valid from now for ``ttl``."""
        if not sub:
            raise ValueError("a token needs a subject")
        if ttl < timedelta(seconds=1):
            raise ValueError("a token lifetime must be at least one second")
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": sub,
            "aud": self.audience,
            "exp": now + int(ttl.total_seconds()),
            "iat": now,
            "nbf": now,
            "jti": secrets.token_urlsafe(16),
            "azp": client_id,
            "client_id": client_id,  # RFC 9068 §2.2 names the client so
            "groups": _names(groups, "groups"),
            "roles": _names(roles, "roles"),
            "permissions": _names(permissions, "permissions"),
        }
        headers = {"kid": self.kid, "typ": "at+jwt"}
        return jwt.encode(claims, self._key, algorithm="ES256", headers=headers)

    def discovery_document(self) -> dict[str, object]:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.issuer.rstrip("/") + JWKS_PATH,
            "id_token_signing_alg_values_supported": ["ES256"],
            "subject_types_supported": ["public"],
            "claims_supported": _CLAIMS,
        }

    def jwks(self) -> dict[str, object]:
        """The public key set; the private key never leaves this object."""
        return {"keys": [{**self._public_members(), "kid": self.kid, "use": "sig", "alg": "ES256"}]}

    def routes(self) -> list[BaseRoute]:
        """``GET`` routes for the discovery document and key set, to be mounted at the
        issuer URL's path (the server's root when the issuer is its base URL)."""

        async def openid_configuration(request: Request) -> JSONResponse:
            return JSONResponse(self.discovery_document(), headers=_CACHE_HEADERS)

        async def jwks(request: Request) -> JSONResponse:
            return JSONResponse(self.jwks(), headers=_CACHE_HEADERS)

        return [
            Route(DISCOVERY_PATH, openid_configuration, methods=["GET"]),
            Route(JWKS_PATH, jwks, methods=["GET"]),
        ]

    def _public_members(self) -> dict[str, str]:
        numbers = self._key.public_key().public_numbers()
        return {
            "crv": "P-256",
            "kty": "EC",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
        }


def _load_or_create_key(path: Path) -> ec.EllipticCurvePrivateKey:
    return _parse_key(keyfiles.load_or_create(path, _new_key_pem), path)


def _new_key_pem() -> bytes:
    return ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _parse_key(pem: bytes, path: Path) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise ValueError(f"{path} does not hold an unencrypted PEM private key") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ValueError(f"{path} must hold an EC P-256 private key")
    return key


def _thumbprint(members: dict[str, str]) -> str:
    """RFC 7638: SHA-256 of the required members, sorted, without whitespace."""
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":"))
    return _b64url(hashlib.sha256(canonical.encode()).digest())


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _names(values: Sequence[str], field: str) -> list[str]:
    # A bare string is a Sequence[str] too, and would become a list of its letters.
    if isinstance(values, str):
        raise TypeError(f"{field} takes a sequence of names, not one string")
    return list(values)
