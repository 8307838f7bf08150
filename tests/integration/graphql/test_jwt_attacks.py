"""RFC 8725 attack suite, end to end: each forged token gets HTTP 401, nothing more.

The server here trusts an external issuer (the OIDC identity-provider double standing in
for Authentik, on a real loopback socket), so every token goes through discovery, the
JWKS and the production validation path.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from fortemi.app import create_app
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import error_codes
from tests.support.oidc_double import OidcProviderDouble, SigningKey, b64url, compact

ME = {"query": "{ me { sub } }"}


@pytest.fixture(scope="module")
def idp() -> Iterator[OidcProviderDouble]:
    with OidcProviderDouble(slug="attack-suite") as provider:
        yield provider


@pytest.fixture(scope="module")
async def client(
    idp: OidcProviderDouble, settings: Settings, service_urls: ServiceUrls
) -> AsyncIterator[httpx.AsyncClient]:
    external = settings.model_copy(
        update={
            "oidc_issuer": idp.issuer,
            "oidc_audience": idp.client_id,
            # Every token is checked afresh, and a rotated key is fetched at once.
            "oidc_token_cache_seconds": 0,
            "oidc_jwks_min_refresh_seconds": 0,
        }
    )
    runtime = await Runtime.open(external, service_urls)
    transport = httpx.ASGITransport(app=create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as c:
        yield c
    await runtime.close()


async def _status(client: httpx.AsyncClient, token: str) -> tuple[int, dict[str, Any]]:
    response = await client.post("/graphql", json=ME, headers={"Authorization": f"Bearer {token}"})
    return response.status_code, response.json()


def _hs256_with_public_key(idp: OidcProviderDouble) -> str:
    public_pem = idp.signing_key.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    claims = _claims(idp)
    header = {"alg": "HS256", "kid": idp.signing_key.kid, "typ": "JWT"}
    return compact(header, claims, lambda data: hmac.new(public_pem, data, hashlib.sha256).digest())


def _claims(idp: OidcProviderDouble, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": idp.issuer, "sub": "mallory", "aud": idp.client_id, "azp": idp.client_id,
        "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex,
    }  # fmt: skip
    claims.update(overrides)
    return claims


def _unsigned(idp: OidcProviderDouble) -> str:
    header = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{b64url(json.dumps(_claims(idp)).encode())}."


def _attacker_signed(idp: OidcProviderDouble, **headers: Any) -> str:
    attacker = SigningKey.generate("RSA")
    return idp.sign(_claims(idp), headers={"kid": attacker.kid, **headers}, key=attacker)


ATTACKS: dict[str, Callable[[OidcProviderDouble], str]] = {
    "alg none": lambda idp: _unsigned(idp),
    "hs256 signed with the public key": _hs256_with_public_key,
    "unknown kid": lambda idp: _attacker_signed(idp),
    "kid with path characters": lambda idp: _attacker_signed(idp, kid="../../../../etc/passwd"),
    "kid with sql characters": lambda idp: _attacker_signed(idp, kid="x' OR '1'='1"),
    "jku pointing elsewhere": lambda idp: _attacker_signed(idp, jku="https://evil.example/jwks"),
    "x5u pointing elsewhere": lambda idp: _attacker_signed(idp, x5u="https://evil.example/cert"),
    "expired": lambda idp: idp.access_token(now=time.time() - 3600, ttl=60),
    "not yet valid": lambda idp: idp.access_token(claims={"nbf": int(time.time()) + 3600}),
    "issued in the future": lambda idp: idp.access_token(claims={"iat": int(time.time()) + 3600}),
    "wrong issuer": lambda idp: idp.access_token(claims={"iss": "https://evil.example/"}),
    "issuer without its trailing slash": lambda idp: idp.access_token(
        claims={"iss": idp.issuer.rstrip("/")}
    ),
    "wrong audience": lambda idp: idp.access_token(claims={"aud": "another-app"}),
    "missing sub": lambda idp: idp.access_token(drop=["sub"]),
    "id token as access token": lambda idp: idp.id_token(idp.access_token()),
    "garbage": lambda idp: "this-is-not-a-token",
    "one megabyte": lambda idp: "A" * 1_048_576,
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_forged_token_is_refused_with_401(
    client: httpx.AsyncClient, idp: OidcProviderDouble, attack: str
) -> None:
    status, body = await _status(client, ATTACKS[attack](idp))
    assert status == 401
    assert error_codes(body) == ["UNAUTHENTICATED"]
    assert "data" not in body or body["data"] is None


async def test_after_rotation_the_new_key_is_accepted_and_the_old_one_refused(
    client: httpx.AsyncClient, idp: OidcProviderDouble
) -> None:
    before = idp.access_token("ada")
    assert (await _status(client, before))[0] == 200
    idp.rotate("EC", keep_old=False)
    # The first token under the new key names an unknown kid: the key set is refetched
    # then and there, without a restart...
    status, body = await _status(client, idp.access_token("ada"))
    assert status == 200
    assert body == {"data": {"me": {"sub": "ada"}}}
    # ...and from that fetch on, the key the provider stopped publishing is not trusted.
    assert (await _status(client, before))[0] == 401
