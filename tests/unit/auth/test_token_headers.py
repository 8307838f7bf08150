"""What a token's header may not decide: its algorithm (fixed by the server and bound to
the key, RFC 8725 §3.1), critical extensions, or where its key comes from (§3.10)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from fortemi.auth.tokens import TokenValidator
from tests.support.oidc_double import OidcProviderDouble, SigningKey, compact

from .helpers import payload_of, refused, validator_for


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
@pytest.mark.parametrize("signature", [b"", b"anything"])
async def test_unsigned_alg_none_token_is_refused_before_any_key_fetch(
    idp: OidcProviderDouble, validator: TokenValidator, alg: str, signature: bytes
) -> None:
    header = {"alg": alg, "kid": idp.signing_key.kid, "typ": "JWT"}
    token = compact(header, payload_of(idp.access_token()), lambda _: signature)

    with refused("not allowed"):
        await validator.validate(token)
    assert idp.jwks_requests == 0


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
async def test_hmac_token_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, alg: str
) -> None:
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    header = {"alg": alg, "kid": idp.signing_key.kid, "typ": "JWT"}
    token = compact(
        header,
        payload_of(idp.access_token()),
        lambda data: hmac.new(b"shared-secret", data, digest).digest(),
    )

    with refused("not allowed"):
        await validator.validate(token)


def _rsa_public_pem(key: SigningKey) -> bytes:
    return key.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


async def test_hs256_token_keyed_with_the_rsa_public_key_pem_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    # The classic alg-confusion forgery: the public key, read as an HMAC secret, is known
    # to everyone; a verifier that lets the token pick the algorithm accepts it.
    pem = _rsa_public_pem(idp.signing_key)
    header = {"alg": "HS256", "kid": idp.signing_key.kid, "typ": "JWT"}
    claims = payload_of(idp.access_token())
    token = compact(header, claims, lambda data: hmac.new(pem, data, hashlib.sha256).digest())

    with refused("not allowed"):
        await validator.validate(token)


async def test_key_binding_refuses_hs256_even_when_past_the_allow_list(
    idp: OidcProviderDouble, http: httpx.AsyncClient, validator: TokenValidator
) -> None:
    # Defence in depth behind the allow-list: the key itself only verifies RS256.
    pem = _rsa_public_pem(idp.signing_key)
    header = {"alg": "HS256", "kid": idp.signing_key.kid, "typ": "JWT"}
    claims = payload_of(idp.access_token())
    token = compact(header, claims, lambda data: hmac.new(pem, data, hashlib.sha256).digest())
    key = await validator._jwks.get_signing_key(idp.signing_key.kid)

    with refused("does not match its key's RS256"):
        validator.validate_signature(token, key, "HS256")


async def test_alg_other_than_the_keys_own_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    # PS256 by the very RSA key, but the key set binds that key to RS256.
    token = idp.access_token(headers={"alg": "PS256"})

    with refused("PS256 does not match its key's RS256"):
        await validator.validate(token)


async def test_ec_signature_presented_under_an_rsa_kid_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    attacker = SigningKey.generate("EC")
    token = idp.access_token(key=attacker, headers={"kid": idp.signing_key.kid})

    with refused("ES256 does not match its key's RS256"):
        await validator.validate(token)


async def test_alg_outside_the_configured_allow_list_is_refused(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    validator = validator_for(idp, http, tmp_path, OIDC_ALGORITHMS="ES256,EdDSA")

    with refused("'RS256' is not allowed"):
        await validator.validate(idp.access_token())


@pytest.mark.parametrize(
    "extra", [{"crit": ["b64"], "b64": True}, {"crit": ["exp"], "exp": 1}, {"crit": "b64"}]
)
async def test_token_with_a_crit_header_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, extra: dict[str, Any]
) -> None:
    with refused("crit"):
        await validator.validate(idp.access_token(headers=extra))


@pytest.mark.parametrize("named", ["providers-kid", "own-kid", "no-kid"])
async def test_key_embedded_in_the_token_header_is_never_used(
    idp: OidcProviderDouble, validator: TokenValidator, named: str
) -> None:
    attacker = SigningKey.generate("RSA")
    kid = {"providers-kid": idp.signing_key.kid, "own-kid": attacker.kid, "no-kid": None}[named]
    headers = {"kid": kid, "jwk": attacker.public_jwk()}
    token = idp.access_token(key=attacker, headers=headers)

    with refused("Signature verification failed|no signing key"):
        await validator.validate(token)


async def test_jku_and_x5u_headers_are_never_fetched(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    attacker = SigningKey.generate("RSA")
    elsewhere = f"http://127.0.0.1:{idp.port}/attacker"
    headers = {"jku": f"{elsewhere}/jwks.json", "x5u": f"{elsewhere}/cert.pem"}

    with refused("no signing key"):
        await validator.validate(idp.access_token(key=attacker, headers=headers))
    assert idp.hits[f"{idp.path}jwks/"] == 1
    assert not [path for path in idp.hits if path.startswith("/attacker")]
