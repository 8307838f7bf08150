"""OidcJwksSource against the provider double, over real HTTP."""

from __future__ import annotations

import asyncio
import socket
import uuid
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from fortemi.auth.oidc import OidcJwksSource, check_issuer_url
from fortemi.platform.errors import Unauthenticated
from tests.support.oidc_double import OidcProviderDouble, SigningKey

from .helpers import ManualClock, jwks_source, refused, validator_for


async def test_discovery_then_key_set_are_fetched_once_and_cached(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    source = jwks_source(idp, http, ManualClock())

    first = await source.get_signing_key(idp.signing_key.kid)
    second = await source.get_signing_key(idp.signing_key.kid)

    assert first.key_id == second.key_id == idp.signing_key.kid
    assert (idp.discovery_requests, idp.jwks_requests) == (1, 1)


async def test_key_set_is_refetched_once_cache_seconds_have_passed(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    clock = ManualClock()
    source = jwks_source(idp, http, clock, cache_seconds=600)
    await source.get_signing_key(idp.signing_key.kid)

    clock.advance(599)
    await source.get_signing_key(idp.signing_key.kid)
    assert idp.jwks_requests == 1
    clock.advance(1)
    await source.get_signing_key(idp.signing_key.kid)
    assert idp.jwks_requests == 2


async def test_discovery_naming_another_issuer_is_unauthenticated(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    idp.discovery_override = {**idp.discovery_document(), "issuer": idp.issuer.rstrip("/")}
    source = jwks_source(idp, http, ManualClock())

    with refused("names issuer .* must match it exactly"):
        await source.get_signing_key(idp.signing_key.kid)
    assert idp.jwks_requests == 0


@pytest.mark.parametrize(
    "jwks_uri", ["http://idp.example.com/jwks", "ftp://127.0.0.1/jwks", None, 42]
)
async def test_discovery_with_an_unacceptable_jwks_uri_is_unauthenticated(
    idp: OidcProviderDouble, http: httpx.AsyncClient, jwks_uri: object
) -> None:
    idp.discovery_override = {**idp.discovery_document(), "jwks_uri": jwks_uri}
    source = jwks_source(idp, http, ManualClock())

    with refused("jwks_uri"):
        await source.get_signing_key(idp.signing_key.kid)


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (500, b'{"keys": []}', "cannot fetch"),
        (302, b"", "cannot fetch"),
        (200, b"<html>not json</html>", "not valid JSON"),
        (200, b"[1, 2]", "not a JSON object"),
        (200, b'{"keys": "nope"}', "no keys array"),
        (200, b'{"keys": []}', "no usable signing key"),
    ],
)
async def test_bad_key_set_responses_are_unauthenticated(
    idp: OidcProviderDouble, http: httpx.AsyncClient, status: int, body: bytes, reason: str
) -> None:
    idp.jwks_reply = (status, body)
    source = jwks_source(idp, http, ManualClock())

    with refused(reason):
        await source.get_signing_key(idp.signing_key.kid)


async def test_unreachable_provider_is_unauthenticated(http: httpx.AsyncClient) -> None:
    with socket.socket() as unused:  # bound, never listening: connections are refused
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        source = OidcJwksSource(
            f"http://127.0.0.1:{port}/", http, cache_seconds=60, min_refresh_seconds=0
        )
        with refused("cannot fetch the discovery document"):
            await source.get_signing_key("any")


async def test_provider_outage_keeps_serving_keys_that_have_not_expired(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    clock = ManualClock()
    source = jwks_source(idp, http, clock, cache_seconds=600, min_refresh_seconds=10)
    await source.get_signing_key(idp.signing_key.kid)
    idp.jwks_reply = (503, b"")
    clock.advance(20)

    with refused("no signing key"):
        await source.get_signing_key("unknown")  # refetch fails ...
    key = await source.get_signing_key(idp.signing_key.kid)  # ... known keys still serve
    assert key.key_id == idp.signing_key.kid


async def test_expired_key_set_fails_closed_while_the_provider_is_down(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    clock = ManualClock()
    source = jwks_source(idp, http, clock, cache_seconds=600, min_refresh_seconds=10)
    await source.get_signing_key(idp.signing_key.kid)
    idp.jwks_reply = (503, b"")
    clock.advance(600)

    with refused("signing keys unavailable"):
        await source.get_signing_key(idp.signing_key.kid)
    with refused("signing keys unavailable"):
        await source.get_signing_key(idp.signing_key.kid)  # within the window: no retry
    assert idp.jwks_requests == 2

    idp.jwks_reply = None
    clock.advance(10)
    assert (await source.get_signing_key(idp.signing_key.kid)).key_id == idp.signing_key.kid


async def test_unknown_kid_refetches_at_most_once_per_min_refresh_window(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    clock = ManualClock()
    source = jwks_source(idp, http, clock, min_refresh_seconds=30)
    await source.get_signing_key(idp.signing_key.kid)

    for _ in range(5):
        with refused("no signing key"):
            await source.get_signing_key(uuid.uuid4().hex)
    assert idp.jwks_requests == 1  # the first fetch opened the window

    clock.advance(30)
    for _ in range(5):
        with refused("no signing key"):
            await source.get_signing_key(uuid.uuid4().hex)
    assert idp.jwks_requests == 2


async def test_flood_of_tokens_with_random_kids_makes_one_request_per_window(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    clock = ManualClock()
    validator = validator_for(idp, http, tmp_path, clock=clock, min_refresh_seconds=30)

    async def flood() -> None:
        async def attempt() -> None:
            with refused("no signing key"):
                await validator.validate(idp.access_token(headers={"kid": uuid.uuid4().hex}))

        await asyncio.gather(*(attempt() for _ in range(100)))

    await flood()
    assert idp.jwks_requests == 1
    clock.advance(30)
    await flood()
    assert idp.jwks_requests == 2
    clock.advance(29)
    await flood()
    assert idp.jwks_requests == 2


async def test_concurrent_refetches_coalesce_into_one_request(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    # No rate limit at all: only the single-flight lock keeps this to one request.
    source = jwks_source(idp, http, ManualClock(), min_refresh_seconds=0)
    await source.get_signing_key(idp.signing_key.kid)

    async def attempt() -> None:
        with pytest.raises(Unauthenticated):
            await source.get_signing_key(uuid.uuid4().hex)

    await asyncio.gather(*(attempt() for _ in range(50)))
    assert idp.jwks_requests == 2


async def test_key_rotated_in_at_the_provider_is_picked_up_after_the_window(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    clock = ManualClock()
    validator = validator_for(idp, http, tmp_path, clock=clock, min_refresh_seconds=30)
    await validator.validate(idp.access_token("before"))
    idp.rotate("EC")
    token = idp.access_token("after")

    with refused("no signing key"):
        await validator.validate(token)  # the fetch that opened the window was just now
    clock.advance(30)
    principal = await validator.validate(token)

    assert principal.sub == "after"
    assert idp.jwks_requests == 2


async def test_missing_kid_is_accepted_when_the_set_holds_exactly_one_key(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    source = jwks_source(idp, http, ManualClock())

    key = await source.get_signing_key(None)

    assert key.key_id == idp.signing_key.kid


async def test_missing_kid_is_refused_when_the_set_holds_several_keys(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    idp.rotate()
    source = jwks_source(idp, http, ManualClock())

    with refused("no kid and the key set holds 2 keys"):
        await source.get_signing_key(None)


def _weak_rsa_jwk() -> dict[str, object]:
    # A weak key on purpose: the source must skip it.
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505
    return {**RSAAlgorithm.to_jwk(weak.public_key(), as_dict=True), "kid": "weak"}


async def test_unusable_key_set_entries_are_skipped_without_failing_the_set(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    good = idp.signing_key.public_jwk()
    idp.extra_jwks_entries = [
        "not an object",
        {**good, "kid": "enc", "use": "enc"},
        {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
        {**good, "kid": "none", "alg": "none"},
        {**good, "kid": "hs", "alg": "HS256"},
        {**good, "kid": "private", "d": "AAAA"},
        {**good, "kid": "wrap-only", "key_ops": ["wrapKey"]},
        {**good, "kid": 7},
        {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
        {"kty": "EC", "kid": "odd-curve", "crv": "P-192", "x": "AA", "y": "AA"},
        {"kty": ["RSA"], "kid": "list-kty"},
        {"kid": "no-kty"},
        _weak_rsa_jwk(),
    ]
    source = jwks_source(idp, http, ManualClock(), min_refresh_seconds=0)

    assert (await source.get_signing_key(idp.signing_key.kid)).key_id == idp.signing_key.kid
    assert (await source.get_signing_key(None)).key_id == idp.signing_key.kid  # the only one
    for kid in ("enc", "hmac", "none", "hs", "private", "wrap-only", "broken", "weak"):
        with refused("no signing key"):
            await source.get_signing_key(kid)


async def test_key_set_of_only_unusable_entries_is_unauthenticated(
    idp: OidcProviderDouble, http: httpx.AsyncClient
) -> None:
    idp.published = []
    idp.extra_jwks_entries = [{**SigningKey.generate().public_jwk(), "use": "enc"}]
    source = jwks_source(idp, http, ManualClock())

    with refused("no usable signing key"):
        await source.get_signing_key(None)


@pytest.mark.parametrize(
    "url",
    [
        "https://auth.example.com/application/o/fortemi/",
        "https://auth.example.com",
        "http://127.0.0.1:9000/",
        "http://127.8.9.10/",
        "http://[::1]:8000",
        "http://localhost:8000/realms/x",
    ],
)
def test_check_issuer_url_accepts_https_and_loopback_http(url: str) -> None:
    check_issuer_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://auth.example.com/",
        "http://10.0.0.1/",
        "http://0.0.0.0:8000",
        "http://localhost.example.com/",
        "ftp://127.0.0.1/",
        "auth.example.com",
        "https://",
        "",
    ],
)
def test_check_issuer_url_refuses_plain_http_off_loopback_and_non_urls(url: str) -> None:
    with pytest.raises(ValueError, match=r"https|absolute URL"):
        check_issuer_url(url)


async def test_source_refuses_a_plain_http_issuer_off_loopback(http: httpx.AsyncClient) -> None:
    with pytest.raises(ValueError, match="https"):
        OidcJwksSource("http://auth.example.com/", http, cache_seconds=1, min_refresh_seconds=1)
