"""Each refused token names the check it failed, in the allow-listed words a caller sees."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from fortemi.auth.tokens import bearer_token
from fortemi.platform.errors import AuthFailure, Unauthenticated
from tests.support.oidc_double import OidcProviderDouble, SigningKey, b64url

from .helpers import ManualClock, payload_of, validator_for

NOW = 1_700_000_000.0


def _tampered(idp: OidcProviderDouble) -> str:
    token = idp.access_token(now=NOW)
    header, _, signature = token.split(".")
    forged = {**payload_of(token), "sub": "root"}
    return f"{header}.{b64url(json.dumps(forged).encode())}.{signature}"


CASES: dict[AuthFailure, Callable[[OidcProviderDouble], str]] = {
    "malformed": lambda idp: "not-a-jwt",
    "expired": lambda idp: idp.access_token(now=NOW - 3600, ttl=300),
    "not_yet_valid": lambda idp: idp.access_token(now=NOW, claims={"nbf": NOW + 3600}),
    "issuer_mismatch": lambda idp: idp.access_token(
        now=NOW, claims={"iss": "http://127.0.0.1:8001"}
    ),
    "audience_mismatch": lambda idp: idp.access_token(now=NOW, claims={"aud": "another-api"}),
    "invalid_signature": _tampered,
    "unknown_key": lambda idp: idp.access_token(now=NOW, key=SigningKey.generate()),
    "not_an_access_token": lambda idp: idp.id_token(idp.access_token(now=NOW), now=NOW),
}


@pytest.mark.parametrize("failure", list(CASES))
async def test_refused_token_carries_the_failed_check_as_its_only_extension(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path, failure: AuthFailure
) -> None:
    validator = validator_for(idp, http, tmp_path, now=ManualClock(NOW))
    token = CASES[failure](idp)

    with pytest.raises(Unauthenticated) as caught:
        await validator.validate(token)

    assert caught.value.failure == failure, caught.value.reason
    # Only the allow-listed word reaches extensions; the logged detail stays out.
    assert caught.value.extensions == {"reason": failure}


def test_missing_authorization_header_is_reported_as_missing() -> None:
    with pytest.raises(Unauthenticated) as caught:
        bearer_token(None)
    assert caught.value.extensions == {"reason": "missing"}
