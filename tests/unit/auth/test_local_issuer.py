"""The built-in issuer: key file, token shape, published documents, and the round trip
through discovery and JWKS over an in-process ASGI transport, as the server runs it."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette

from fortemi.auth import LocalIssuer, TokenValidator, build_token_validator, parse_ttl
from fortemi.auth.local_issuer import _thumbprint
from fortemi.platform.settings import Settings

from .helpers import refused


@asynccontextmanager
async def local_validator(settings: Settings, issuer: LocalIssuer) -> AsyncIterator[TokenValidator]:
    """The validator the server builds for its own issuer: same code path, no socket."""
    app = Starlette(routes=issuer.routes())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=settings.issuer) as client:
        yield build_token_validator(settings, client)


def _published_key(issuer: LocalIssuer) -> dict[str, Any]:
    keys = issuer.jwks()["keys"]
    assert isinstance(keys, list)
    assert len(keys) == 1
    entry: dict[str, Any] = keys[0]
    return entry


def _issuer_for(settings: Settings) -> LocalIssuer:
    return LocalIssuer.load_or_create(settings.home, settings.issuer, settings.oidc_audience)


@pytest.mark.parametrize(
    "where",
    [{}, {"host": "0.0.0.0"}, {"public_url": "https://fortemi.example.com/"}],  # noqa: S104
    ids=["default", "all-interfaces", "public-url"],
)
async def test_minted_token_validates_through_discovery_and_jwks(
    tmp_path: Path, where: dict[str, Any]
) -> None:
    settings = Settings(home=tmp_path, **where)
    issuer = _issuer_for(settings)
    token = issuer.mint(
        "alice",
        groups=["staff"],
        roles=["admin"],
        permissions=["notes:write"],
        ttl=parse_ttl("15m"),
    )

    async with local_validator(settings, issuer) as validator:
        principal = await validator.validate(token)

    assert principal.sub == "alice"
    assert principal.groups == {"staff"}
    assert principal.roles == {"admin"}
    assert principal.permissions == {"notes:write"}
    assert principal.issuer == settings.issuer
    assert principal.client_id == "fortemi-cli"
    remaining = principal.expires_at - datetime.now(UTC)
    assert timedelta(minutes=14) < remaining <= timedelta(minutes=15)


async def test_token_of_another_local_issuer_is_refused(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "ours")
    stranger = LocalIssuer.load_or_create(tmp_path / "theirs", settings.issuer, "fortemi")

    async with local_validator(settings, _issuer_for(settings)) as validator:
        with refused("no signing key"):
            await validator.validate(stranger.mint("mallory", roles=["admin"]))


def test_minted_token_is_an_es256_at_jwt_with_the_expected_claims(tmp_path: Path) -> None:
    issuer = LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")

    token = issuer.mint("alice", client_id="ci", ttl=timedelta(seconds=90))
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})

    assert header == {"alg": "ES256", "kid": issuer.kid, "typ": "at+jwt"}
    assert set(claims) >= {"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "azp"}
    assert (claims["iss"], claims["aud"], claims["azp"]) == (
        "http://127.0.0.1:8000",
        "fortemi",
        "ci",
    )
    assert claims["exp"] - claims["iat"] == 90
    assert claims["nbf"] == claims["iat"]
    assert (claims["groups"], claims["roles"], claims["permissions"]) == ([], [], [])
    assert (
        claims["jti"]
        != jwt.decode(issuer.mint("alice"), options={"verify_signature": False})["jti"]
    )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"sub": ""}, ValueError),
        ({"sub": "a", "ttl": timedelta(0)}, ValueError),
        ({"sub": "a", "ttl": timedelta(seconds=-5)}, ValueError),
        ({"sub": "a", "groups": "admins"}, TypeError),
    ],
)
def test_mint_refuses_an_empty_subject_a_non_positive_ttl_and_a_bare_string(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    issuer = LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")

    with pytest.raises(error):
        issuer.mint(**kwargs)


def test_key_file_is_created_0600_in_a_0700_directory(tmp_path: Path) -> None:
    LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")

    key_file = tmp_path / "issuer" / "signing-key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert [p.name for p in key_file.parent.iterdir()] == ["signing-key.pem"]  # no staging left


def test_key_is_reused_across_load_or_create(tmp_path: Path) -> None:
    first = LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")
    token = first.mint("alice")

    second = LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")
    key = jwt.PyJWK(_published_key(second))

    assert second.kid == first.kid
    assert jwt.decode(token, key, algorithms=["ES256"], audience="fortemi")["sub"] == "alice"


def test_key_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "issuer" / "signing-key.pem"
    key_file.parent.mkdir(parents=True)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file.write_bytes(
        rsa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )

    with pytest.raises(ValueError, match="EC P-256"):
        LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")


def test_key_file_that_is_not_pem_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "issuer" / "signing-key.pem"
    key_file.parent.mkdir(parents=True)
    key_file.write_text("not a key")

    with pytest.raises(ValueError, match="PEM private key"):
        LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")


def test_jwks_publishes_the_public_key_only_under_its_thumbprint_kid(tmp_path: Path) -> None:
    issuer = LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")

    entry = _published_key(issuer)

    assert entry["kid"] == issuer.kid
    assert (entry["kty"], entry["crv"], entry["alg"], entry["use"]) == (
        "EC",
        "P-256",
        "ES256",
        "sig",
    )
    assert "d" not in entry
    required = {name: entry[name] for name in ("crv", "kty", "x", "y")}
    assert issuer.kid == _thumbprint(required)


def test_thumbprint_matches_the_rfc_7638_example() -> None:
    n = (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJ"
        "ECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FD"
        "W2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4v"
        "MQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    )

    thumbprint = _thumbprint({"e": "AQAB", "kty": "RSA", "n": n})

    assert thumbprint == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


async def test_routes_serve_discovery_and_jwks_with_a_five_minute_cache(tmp_path: Path) -> None:
    issuer = LocalIssuer.load_or_create(tmp_path, "http://127.0.0.1:8000", "fortemi")
    transport = httpx.ASGITransport(app=Starlette(routes=issuer.routes()))

    async with httpx.AsyncClient(transport=transport, base_url=issuer.issuer) as client:
        discovery = await client.get("/.well-known/openid-configuration")
        keys = await client.get(discovery.json()["jwks_uri"])
        refused_post = await client.post("/.well-known/jwks.json")

    assert discovery.json()["issuer"] == "http://127.0.0.1:8000"
    assert discovery.json()["jwks_uri"] == "http://127.0.0.1:8000/.well-known/jwks.json"
    assert discovery.json()["id_token_signing_alg_values_supported"] == ["ES256"]
    assert keys.json() == issuer.jwks()
    for response in (discovery, keys):
        assert response.headers["cache-control"] == "public, max-age=300"
    assert refused_post.status_code == 405


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("1h", timedelta(hours=1)),
        ("7d", timedelta(days=7)),
        ("30d", timedelta(days=30)),
        (" 2h ", timedelta(hours=2)),
        ("720h", timedelta(days=30)),
    ],
)
def test_parse_ttl_reads_seconds_minutes_hours_and_days(text: str, expected: timedelta) -> None:
    assert parse_ttl(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "h",
        "1",
        "1.5h",
        "-1h",
        "1 h",
        "1H",
        "1w",
        "1h30m",
        "0s",
        "0d",
        "31d",
        "721h",
        "2592001s",
        "99999999999d",
        "\u0661h",  # an Arabic-Indic digit: [0-9] only
    ],
)
def test_parse_ttl_refuses_junk_zero_and_more_than_30_days(text: str) -> None:
    with pytest.raises(ValueError, match=r"lifetime|maximum|positive"):
        parse_ttl(text)
