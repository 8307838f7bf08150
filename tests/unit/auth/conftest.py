"""Fixtures for the auth tests: the OIDC provider double on a real loopback socket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.support.oidc_double import OidcProviderDouble


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OidcProviderDouble]:
    """One provider double (uvicorn in a thread) for the whole session."""
    with OidcProviderDouble() as provider:
        yield provider


@pytest.fixture
def idp(oidc_provider: OidcProviderDouble) -> OidcProviderDouble:
    """The shared double, reset to a fresh key, no faults and zero request counts."""
    oidc_provider.reset()
    return oidc_provider


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """A real HTTP client (no mock transport), closed after the test."""
    async with httpx.AsyncClient() as client:
        yield client
