"""An OpenID Connect provider's signing keys: discovery, key-set fetch, cache and rotation.

Keys are learnt the OIDC way (Discovery 1.0 §4): read ``{issuer}/.well-known/openid-
configuration``, check that it names exactly the configured issuer, fetch the key set at
its ``jwks_uri``. A token only names its key by ``kid``; where keys come from is fixed here,
so ``jku``, ``x5u`` and an embedded ``jwk`` header are never followed (RFC 8725 §3.10).

Every failure to reach or read the provider becomes :class:`Unauthenticated` (the token
cannot be validated now); no httpx or PyJWT exception leaves this module.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx
import jwt

from fortemi.platform.errors import Unauthenticated
from fortemi.platform.settings import JWT_ALGORITHMS
from fortemi.platform.urls import check_issuer_url

__all__ = ["JwksSource", "OidcJwksSource", "check_issuer_url"]

DISCOVERY_PATH = "/.well-known/openid-configuration"
_KEY_TYPES = ("RSA", "EC", "OKP")
# Members only a private or symmetric key has. A published set carrying them is
# misconfigured, and PyJWT would load a key object that cannot verify.
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


class JwksSource(Protocol):
    """Where the validator gets the key that should have signed a token."""

    async def get_signing_key(self, kid: str | None) -> jwt.PyJWK:
        """The signing key named ``kid``, or the only one when ``kid`` is None.

        Raises :class:`Unauthenticated` when there is no such key or none can be fetched.
        """
        ...


class OidcJwksSource:
    """The provider's key set, discovered, cached, and refetched when a ``kid`` is unknown.

    A fetched set is used for ``cache_seconds``. An unknown ``kid`` triggers a refetch,
    since the provider may have rotated a key in; but fetches, for whatever reason, start
    at most once per ``min_refresh_seconds`` of ``clock`` and concurrent callers share one
    fetch, so tokens with made-up kids cannot turn into a request flood at the provider.
    Requests go through ``client``, with its timeout and transport.

    ``issuer`` and the discovered ``jwks_uri`` must pass :func:`check_issuer_url` (else
    ValueError here, Unauthenticated at discovery) unless ``enforce_https`` is False, which
    is for a ``client`` whose transport never leaves the process (the local issuer's ASGI
    app): there is no network path to protect, whatever host the issuer URL names.
    """

    def __init__(
        self,
        issuer: str,
        client: httpx.AsyncClient,
        *,
        cache_seconds: float,
        min_refresh_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        enforce_https: bool = True,
    ) -> None:
        self._enforce_https = enforce_https
        if enforce_https:
            check_issuer_url(issuer)
        self._issuer = issuer
        # Discovery 1.0 §4.1: a terminating "/" is removed before appending the path.
        self._discovery_url = issuer.rstrip("/") + DISCOVERY_PATH
        self._client = client
        self._cache_seconds = cache_seconds
        self._min_refresh_seconds = min_refresh_seconds
        self._clock = clock
        self._lock = asyncio.Lock()
        self._jwks_uri: str | None = None
        self._keys: list[jwt.PyJWK] | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None
        self._attempts = 0
        self._last_error: str | None = None

    async def get_signing_key(self, kid: str | None) -> jwt.PyJWK:
        refreshed = self._expired()
        if refreshed:
            await self._refresh()
        keys = self._usable_keys()
        key = _find(keys, kid)
        if key is None and kid is not None and not refreshed:
            await self._refresh()
            keys = self._usable_keys()
            key = _find(keys, kid)
        if key is not None:
            return key
        if kid is None:
            raise Unauthenticated(
                f"token has no kid and the key set holds {len(keys)} keys", failure="unknown_key"
            )
        raise Unauthenticated(f"no signing key with kid {kid[:64]!r}", failure="unknown_key")

    def _expired(self) -> bool:
        return self._keys is None or self._clock() - self._fetched_at >= self._cache_seconds

    def _usable_keys(self) -> list[jwt.PyJWK]:
        # Expired keys are still used when the refresh was merely postponed by the rate
        # limit, but not once the provider failed to answer: fail closed.
        if self._keys is None or (self._expired() and self._last_error is not None):
            raise Unauthenticated(f"signing keys unavailable: {self._last_error or 'none yet'}")
        return self._keys

    async def _refresh(self) -> None:
        seen = self._attempts
        async with self._lock:
            if self._attempts != seen:
                return  # another caller fetched while this one waited: share its result
            now = self._clock()
            if (
                self._attempted_at is not None
                and now - self._attempted_at < self._min_refresh_seconds
            ):
                return
            self._attempted_at = now
            try:
                self._keys = await self._fetch()
                self._fetched_at = now
                self._last_error = None
            except Unauthenticated as exc:
                self._last_error = exc.reason  # keys already held stay in use until expiry
            finally:
                self._attempts += 1

    async def _fetch(self) -> list[jwt.PyJWK]:
        if self._jwks_uri is None:
            self._jwks_uri = await self._discover()
        try:
            return _signing_keys(await self._get_json(self._jwks_uri, "key set"))
        except Unauthenticated:
            self._jwks_uri = None  # rediscover next time: the provider may have moved it
            raise

    async def _discover(self) -> str:
        document = await self._get_json(self._discovery_url, "discovery document")
        named = document.get("issuer")
        if named != self._issuer:
            raise Unauthenticated(
                f"discovery document names issuer {named!r}, but the configured issuer is "
                f"{self._issuer!r}; OIDC_ISSUER must match it exactly"
            )
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise Unauthenticated("discovery document has no jwks_uri")
        if self._enforce_https:
            try:
                check_issuer_url(jwks_uri)
            except ValueError as exc:
                raise Unauthenticated(f"jwks_uri refused: {exc}") from exc
        return jwks_uri

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            response = await self._client.get(url)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
            raise Unauthenticated(f"cannot fetch the {what} at {url}: {exc!r}") from exc
        except (ValueError, RecursionError) as exc:
            raise Unauthenticated(f"the {what} at {url} is not valid JSON") from exc
        if not isinstance(document, dict):
            raise Unauthenticated(f"the {what} at {url} is not a JSON object")
        return document


def _signing_keys(document: dict[str, Any]) -> list[jwt.PyJWK]:
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise Unauthenticated("the key set has no keys array")
    keys = [key for entry in entries if (key := _signing_key(entry)) is not None]
    if not keys:
        raise Unauthenticated("the key set holds no usable signing key")
    return keys


def _signing_key(entry: object) -> jwt.PyJWK | None:
    """``entry`` as a verification key, or None when it is not one: one odd key (an
    encryption key, a curve PyJWT lacks) must not take the whole set down with it."""
    if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
        return None
    if entry.get("kty") not in _KEY_TYPES or _PRIVATE_MEMBERS.intersection(entry):
        return None
    alg, kid, ops = entry.get("alg"), entry.get("kid"), entry.get("key_ops")
    if alg is not None and not (isinstance(alg, str) and alg in JWT_ALGORITHMS):
        return None
    if kid is not None and not isinstance(kid, str):
        return None
    if ops is not None and not (isinstance(ops, list) and "verify" in ops):
        return None
    try:
        key = jwt.PyJWK(entry)
    except jwt.PyJWTError:
        return None
    if key.Algorithm.check_key_length(key.key) is not None:
        return None  # below the minimum length for its algorithm (e.g. RSA under 2048 bits)
    return key


def _find(keys: list[jwt.PyJWK], kid: str | None) -> jwt.PyJWK | None:
    if kid is None:
        # Without a kid the choice would be a guess; it is safe only when there is none.
        return keys[0] if len(keys) == 1 else None
    return next((key for key in keys if key.key_id == kid), None)
