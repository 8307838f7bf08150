"""Shared pieces of the auth tests: a manual clock and settings for a given issuer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from fortemi.auth.oidc import OidcJwksSource
from fortemi.auth.tokens import TokenValidator
from fortemi.platform.errors import Unauthenticated
from fortemi.platform.settings import Settings
from tests.support.oidc_double import OidcProviderDouble

AUDIENCE = "fortemi"
GENERIC_MESSAGE = Unauthenticated("probe").message


@contextmanager
def refused(reason: str) -> Iterator[pytest.ExceptionInfo[Unauthenticated]]:
    """Expect Unauthenticated whose ``reason`` matches ``reason`` (a regex), while the
    message the caller would see stays the generic one."""
    with pytest.raises(Unauthenticated) as caught:
        yield caught
    assert re.search(reason, caught.value.reason), caught.value.reason
    assert caught.value.message == GENERIC_MESSAGE


class ManualClock:
    """A clock that moves only when the test says so."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def payload_of(token: str) -> dict[str, Any]:
    """The claims of ``token``, unverified: a starting point for forgeries."""
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


def settings_for(home: Path, issuer: str, **overrides: Any) -> Settings:
    """Settings trusting ``issuer``; aliased fields (``OIDC_*``) are given by alias."""
    fields: dict[str, Any] = {"OIDC_ISSUER": issuer, "OIDC_AUDIENCE": AUDIENCE, **overrides}
    return Settings(home=home, **fields)


def jwks_source(
    idp: OidcProviderDouble,
    http: httpx.AsyncClient,
    clock: ManualClock,
    *,
    cache_seconds: float = 3600,
    min_refresh_seconds: float = 30,
) -> OidcJwksSource:
    return OidcJwksSource(
        idp.issuer,
        http,
        cache_seconds=cache_seconds,
        min_refresh_seconds=min_refresh_seconds,
        clock=clock,
    )


def validator_for(
    idp: OidcProviderDouble,
    http: httpx.AsyncClient,
    home: Path,
    *,
    clock: ManualClock | None = None,
    now: ManualClock | None = None,
    min_refresh_seconds: float = 30,
    cache_seconds: float = 3600,
    **overrides: Any,
) -> TokenValidator:
    """A validator for the double: ``clock`` drives key refreshes, ``now`` token times."""
    source = jwks_source(
        idp,
        http,
        clock or ManualClock(),
        cache_seconds=cache_seconds,
        min_refresh_seconds=min_refresh_seconds,
    )
    settings = settings_for(home, idp.issuer, **overrides)
    if now is None:
        return TokenValidator(settings, source)
    return TokenValidator(settings, source, clock=now)
