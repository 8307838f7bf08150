"""Validated tokens are remembered briefly, never past their exp, and never when invalid."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from fortemi.auth.principal import Principal
from fortemi.auth.token_cache import TokenCache
from fortemi.auth.tokens import TokenValidator
from tests.support.oidc_double import OidcProviderDouble

from .helpers import ManualClock, refused, validator_for

NOW = 1_700_000_000.0


def _counting(validator: TokenValidator, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each signature verification the validator performs."""
    calls: list[str] = []
    original = validator.validate_signature

    def counted(token: str, key: Any, alg: str) -> dict[str, Any]:
        calls.append(token)
        return original(token, key, alg)

    monkeypatch.setattr(validator, "validate_signature", counted)
    return calls


async def test_a_token_seen_again_within_the_ttl_is_not_verified_again(
    idp: OidcProviderDouble,
    http: httpx.AsyncClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock(NOW)
    validator = validator_for(idp, http, tmp_path, now=clock, OIDC_TOKEN_CACHE_SECONDS=60)
    verified = _counting(validator, monkeypatch)
    token = idp.access_token("cached", now=NOW, ttl=3600)

    first = await validator.validate(token)
    clock.advance(59)
    second = await validator.validate(token)
    assert second == first
    assert len(verified) == 1

    clock.advance(2)  # past the cache's ttl: verified afresh
    await validator.validate(token)
    assert len(verified) == 2


async def test_a_cached_token_is_refused_once_it_expires(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    clock = ManualClock(NOW)
    validator = validator_for(idp, http, tmp_path, now=clock, OIDC_TOKEN_CACHE_SECONDS=3600)
    token = idp.access_token("short-lived", now=NOW, ttl=10)
    await validator.validate(token)
    clock.advance(10 + 31)  # past exp and the 30 s leeway, well within the cache ttl
    with refused("expired"):
        await validator.validate(token)


async def test_invalid_tokens_are_never_cached(
    idp: OidcProviderDouble,
    http: httpx.AsyncClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock(NOW)
    validator = validator_for(idp, http, tmp_path, now=clock, OIDC_TOKEN_CACHE_SECONDS=60)
    verified = _counting(validator, monkeypatch)
    token = idp.access_token("wrong-audience", now=NOW, claims={"aud": "someone-else"})
    for _ in range(2):
        with refused("(?i)audience"):
            await validator.validate(token)
    assert len(verified) == 2


async def test_a_zero_ttl_verifies_every_request(
    idp: OidcProviderDouble,
    http: httpx.AsyncClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    validator = validator_for(idp, http, tmp_path, now=ManualClock(NOW), OIDC_TOKEN_CACHE_SECONDS=0)
    verified = _counting(validator, monkeypatch)
    token = idp.access_token("uncached", now=NOW)
    await validator.validate(token)
    await validator.validate(token)
    assert len(verified) == 2


def _principal(sub: str, expires_in: float) -> Principal:
    return Principal(
        sub=sub,
        groups=frozenset(),
        roles=frozenset(),
        permissions=frozenset(),
        issuer="https://idp.example",
        client_id=None,
        token_id=None,
        expires_at=datetime.fromtimestamp(NOW, UTC) + timedelta(seconds=expires_in),
    )


def test_the_cache_is_bounded_and_evicts_the_least_recently_used() -> None:
    cache = TokenCache(ttl=60, max_entries=2)
    for name in ("a", "b"):
        cache.put(name, _principal(name, 600), NOW)
    assert cache.get("a", NOW) is not None  # "a" is now the most recent
    cache.put("c", _principal("c", 600), NOW)
    assert len(cache) == 2
    assert cache.get("b", NOW) is None
    assert cache.get("a", NOW) is not None
    assert cache.get("c", NOW) is not None


def test_an_entry_never_outlives_its_token() -> None:
    cache = TokenCache(ttl=3600)
    cache.put("t", _principal("t", 5), NOW)
    assert cache.get("t", NOW + 4) is not None
    assert cache.get("t", NOW + 5) is None
