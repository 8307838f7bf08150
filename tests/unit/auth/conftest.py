"""Fixtures for the auth tests: the OIDC provider double on a real loopback socket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from fortemi.auth.tokens import TokenValidator
from tests.support.oidc_double import OidcProviderDouble

from .helpers import validator_for


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


@pytest.fixture
def validator(idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path) -> TokenValidator:
    """A validator trusting the double, with default settings and the wall clock."""
    return validator_for(idp, http, tmp_path)
