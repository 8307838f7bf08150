"""Bearer access tokens in, a :class:`Principal` out (RFC 6750, RFC 9068, RFC 8725).

:meth:`TokenValidator.validate` checks, in this order, so that junk is refused before any
key is fetched:

1. shape: at most 16 KiB, three base64url segments, a JSON header;
2. header: ``alg`` on the server's allow-list (never trusted from the token), no ``crit``,
   ``typ`` absent, ``JWT`` or ``at+jwt``;
3. signature: by the provider's key for ``kid``, whose own algorithm must be ``alg``;
4. claims: ``exp``, ``iat``, ``iss``, ``aud``, ``sub`` present; ``iss`` exact, ``aud``
   contains ours, ``exp``/``nbf``/``iat`` within the leeway of the injected clock;
5. kind: not an ID token (``nonce``, ``at_hash``, ``c_hash``); ``azp`` where required.

Every failure is :class:`Unauthenticated`; the detail goes in ``reason`` (logged), the
message the caller sees stays the generic default, and ``failure`` names the check that
failed in the few words the caller may see (``expired``, ``issuer_mismatch``...).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import jwt

from fortemi.auth.oidc import JwksSource
from fortemi.auth.principal import Principal
from fortemi.auth.token_cache import TokenCache
from fortemi.platform.errors import AuthFailure, Unauthenticated
from fortemi.platform.settings import Settings

__all__ = ["MAX_TOKEN_LENGTH", "TokenValidator", "bearer_token", "claim_values"]

MAX_TOKEN_LENGTH = 16 * 1024
_REQUIRED_CLAIMS = ("exp", "iat", "iss", "aud", "sub")
_ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
_ACCEPTED_TYPES = _ACCESS_TOKEN_TYPES | {"jwt"}
_ID_TOKEN_MARKERS = ("nonce", "at_hash", "c_hash")
_SEPARATORS = re.compile(r"[\s,]+")


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive).

    Raises :class:`Unauthenticated` when the header is missing, names another scheme, or
    does not hold exactly one token.
    """
    parts = (authorization or "").split()
    if not parts:
        raise Unauthenticated("no Authorization header", failure="missing")
    if parts[0].lower() != "bearer":
        raise Unauthenticated(
            f"Authorization scheme {_show(parts[0])} is not Bearer", failure="malformed"
        )
    if len(parts) != 2:
        raise Unauthenticated(
            "Authorization: Bearer must carry exactly one token", failure="malformed"
        )
    return parts[1]


class TokenValidator:
    """Validates access tokens from the one configured issuer against its key set."""

    def __init__(
        self, settings: Settings, jwks: JwksSource, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._jwks = jwks
        self._clock = clock
        self._issuer = settings.issuer
        self._audience = settings.oidc_audience
        # RFC 8725 §3.1: the server fixes the algorithms. Settings already refuses HMAC
        # and "none"; they are removed again so this guarantee does not rest on it.
        self._algorithms = frozenset(
            alg for alg in settings.oidc_algorithms if alg.lower() != "none" and alg[:2] != "HS"
        )
        self._leeway = settings.oidc_leeway_seconds
        self._require_azp = settings.oidc_require_azp
        self._groups_claim = settings.oidc_groups_claim
        self._roles_claim = settings.oidc_roles_claim
        self._permissions_claim = settings.oidc_permissions_claim
        self._cache = TokenCache(settings.oidc_token_cache_seconds)

    async def validate(self, token: str) -> Principal:
        """The principal the token asserts; :class:`Unauthenticated` for any failure."""
        now = self._clock()
        principal = self._cache.get(token, now)
        if principal is None:
            principal = await self._validate(token)
            self._cache.put(token, principal, now)
        return principal

    async def _validate(self, token: str) -> Principal:
        header = _read_header(token)
        alg, kid, typ = self.validate_header(header)
        key = await self._jwks.get_signing_key(kid)
        claims = self.validate_signature(token, key, alg)
        now = self._clock()
        self.validate_exp(claims, now)
        self.validate_nbf(claims, now)
        self.validate_iat(claims, now)
        self.validate_kind(claims, typ)
        return self._principal(claims)

    def validate_header(self, header: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
        """``(alg, kid, typ)`` of an acceptable header; ``typ`` lower-cased."""
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise Unauthenticated(f"algorithm {_show(alg)} is not allowed")
        if "crit" in header:
            raise Unauthenticated("critical header extensions are not supported")
        typ = header.get("typ")
        if typ is not None and not (isinstance(typ, str) and typ.lower() in _ACCEPTED_TYPES):
            raise Unauthenticated(
                f"token type {_show(typ)} is not an access token", failure="not_an_access_token"
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise Unauthenticated("kid is not a string")
        return alg, kid, typ.lower() if typ is not None else None

    def validate_signature(self, token: str, key: jwt.PyJWK, alg: str) -> dict[str, Any]:
        """The claims, once the signature, ``iss``, ``aud`` and required claims hold."""
        # RFC 8725 §3.1: each key is used with exactly one algorithm, the key set's; a
        # token naming another (an RSA key read as an HMAC secret, say) is refused.
        if key.algorithm_name != alg:
            raise Unauthenticated(
                f"token alg {alg} does not match its key's {key.algorithm_name}",
                failure="invalid_signature",
            )
        try:
            return jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self._audience,
                issuer=self._issuer,
                # PyJWT reads the wall clock itself; the time claims are checked against
                # the injected clock instead, by validate_exp/nbf/iat.
                options={
                    "require": list(_REQUIRED_CLAIMS),
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"token rejected: {exc}", failure=_failure(exc)) from exc

    def validate_exp(self, claims: Mapping[str, Any], now: float) -> None:
        if _numeric_date(claims, "exp") <= now - self._leeway:
            raise Unauthenticated("token expired", failure="expired")

    def validate_nbf(self, claims: Mapping[str, Any], now: float) -> None:
        if "nbf" in claims and _numeric_date(claims, "nbf") > now + self._leeway:
            raise Unauthenticated("token not valid yet (nbf)", failure="not_yet_valid")

    def validate_iat(self, claims: Mapping[str, Any], now: float) -> None:
        if _numeric_date(claims, "iat") > now + self._leeway:
            raise Unauthenticated("token issued in the future (iat)", failure="not_yet_valid")

    def validate_kind(self, claims: Mapping[str, Any], typ: str | None) -> None:
        """Refuse ID tokens, and tokens not marked as access tokens where that is required.

        An ID token for a client whose id is our audience would otherwise pass: it is
        signed by the same keys and names the same issuer and audience.
        """
        markers = [name for name in _ID_TOKEN_MARKERS if name in claims]
        if markers:
            raise Unauthenticated(
                f"an ID token is not an access token ({', '.join(markers)})",
                failure="not_an_access_token",
            )
        if self._require_azp and typ not in _ACCESS_TOKEN_TYPES:
            azp = claims.get("azp")
            if not (isinstance(azp, str) and azp):
                raise Unauthenticated(
                    "token has no azp and no at+jwt type", failure="not_an_access_token"
                )

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        sub = claims["sub"]
        if not (isinstance(sub, str) and sub):
            raise Unauthenticated("sub is empty", failure="malformed")
        try:
            expires_at = datetime.fromtimestamp(claims["exp"], UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise Unauthenticated("exp is out of range", failure="malformed") from exc
        azp, jti = claims.get("azp"), claims.get("jti")
        return Principal(
            sub=sub,
            groups=claim_values(claims, self._groups_claim),
            roles=claim_values(claims, self._roles_claim),
            permissions=claim_values(claims, self._permissions_claim),
            issuer=self._issuer,
            client_id=azp if isinstance(azp, str) else None,
            token_id=jti if isinstance(jti, str) else None,
            expires_at=expires_at,
        )


def claim_values(claims: Mapping[str, Any], name: str) -> frozenset[str]:
    """The strings under claim ``name``; empty when it is missing or of another kind.

    ``name`` may be a dotted path into nested objects (Keycloak's ``realm_access.roles``);
    a claim literally named with dots (``https://example.com/roles``) wins over the path.
    The value may be a list of strings (non-strings in it are skipped) or one string of
    names separated by spaces or commas, as OAuth ``scope`` is.
    """
    value = _lookup(claims, name)
    if isinstance(value, str):
        return frozenset(part for part in _SEPARATORS.split(value) if part)
    if isinstance(value, list):
        return frozenset(item for item in value if isinstance(item, str) and item)
    return frozenset()


def _lookup(claims: Mapping[str, Any], name: str) -> object:
    if name in claims:
        return claims[name]
    node: object = claims
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _read_header(token: str) -> dict[str, Any]:
    if not token:
        raise Unauthenticated("empty token", failure="missing")
    if len(token) > MAX_TOKEN_LENGTH:
        raise Unauthenticated(
            f"token longer than {MAX_TOKEN_LENGTH} characters", failure="malformed"
        )
    if not token.isascii() or token.count(".") != 2:
        raise Unauthenticated("not a compact JWS (three base64url segments)", failure="malformed")
    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"malformed token: {exc}", failure="malformed") from exc


# PyJWT's errors, most specific first (InvalidSignatureError is a DecodeError).
_JWT_FAILURES: tuple[tuple[type[jwt.PyJWTError], AuthFailure], ...] = (
    (jwt.InvalidIssuerError, "issuer_mismatch"),
    (jwt.InvalidAudienceError, "audience_mismatch"),
    (jwt.InvalidSignatureError, "invalid_signature"),
    (jwt.MissingRequiredClaimError, "malformed"),
    (jwt.DecodeError, "malformed"),
)


def _failure(exc: jwt.PyJWTError) -> AuthFailure | None:
    return next((failure for kind, failure in _JWT_FAILURES if isinstance(exc, kind)), None)


def _numeric_date(claims: Mapping[str, Any], name: str) -> int | float:
    value = claims[name]
    # bool is an int to Python, not a NumericDate to RFC 7519; JSON's 1e999 parses as inf.
    # Ints are compared exactly, never converted: a huge one would overflow a float.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unauthenticated(f"{name} is not a NumericDate", failure="malformed")
    if isinstance(value, float) and not math.isfinite(value):
        raise Unauthenticated(f"{name} is not a finite NumericDate", failure="malformed")
    return value


def _show(value: object) -> str:
    """A bounded repr of attacker-supplied data, for reasons that end up in logs."""
    text = repr(value)
    return text if len(text) <= 64 else text[:61] + "..."
