"""TokenValidator end to end: tokens minted by the provider double, keys fetched over HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from fortemi.auth import build_token_validator
from fortemi.auth.tokens import TokenValidator
from tests.support.oidc_double import OidcProviderDouble, b64url

from .helpers import AUDIENCE, ManualClock, payload_of, refused, settings_for, validator_for

NOW = 1_700_000_000.0


@pytest.fixture
def at_now(idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path) -> TokenValidator:
    """A validator whose token clock stands at NOW, with the default 30 s leeway."""
    return validator_for(idp, http, tmp_path, now=ManualClock(NOW))


# -- the happy path --------------------------------------------------------------------


async def test_authentik_access_token_becomes_a_principal(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    token = idp.access_token(
        "9c4b1e7f0d2a",
        groups=["authentik Admins", "editors"],
        claims={"roles": ["admin"], "permissions": ["notes:read", "notes:write"]},
    )
    claims = payload_of(token)

    principal = await validator.validate(token)

    assert principal.sub == "9c4b1e7f0d2a"
    assert principal.groups == {"authentik Admins", "editors"}
    assert principal.roles == {"admin"}
    assert principal.has_role("admin")
    assert principal.permissions == {"notes:read", "notes:write"}
    assert principal.issuer == idp.issuer
    assert principal.client_id == idp.client_id
    assert principal.token_id == claims["jti"]
    assert principal.expires_at == datetime.fromtimestamp(claims["exp"], UTC)


async def test_es256_token_validates_once_the_provider_rotates_to_an_ec_key(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    idp.rotate("EC")

    principal = await validator.validate(idp.access_token("ec-user"))

    assert principal.sub == "ec-user"


async def test_es512_token_validates_under_the_default_algorithms(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    idp.rotate("EC-P521")

    principal = await validator.validate(idp.access_token("p521-user"))

    assert principal.sub == "p521-user"


async def test_token_signed_by_a_key_no_longer_published_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    retired = idp.signing_key
    idp.rotate(keep_old=False)

    with refused("no signing key"):
        await validator.validate(idp.access_token(key=retired))


async def test_token_with_a_tampered_payload_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    token = idp.access_token("alice")
    header, _, signature = token.split(".")
    forged = b64url(json.dumps({**payload_of(token), "sub": "root"}).encode())

    with refused("Signature verification failed"):
        await validator.validate(f"{header}.{forged}.{signature}")


async def test_build_token_validator_trusts_the_configured_issuer(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    validator = build_token_validator(settings_for(tmp_path, idp.issuer), http)

    assert (await validator.validate(idp.access_token("bob"))).sub == "bob"


def test_build_token_validator_refuses_a_plain_http_external_issuer(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="https"):
        build_token_validator(settings_for(tmp_path, "http://auth.example.com/o/x/"), http)


# -- registered claims -------------------------------------------------------------------


@pytest.mark.parametrize("claim", ["exp", "iat", "iss", "aud", "sub"])
async def test_token_missing_a_required_claim_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, claim: str
) -> None:
    with refused(f'missing the "{claim}" claim'):
        await validator.validate(idp.access_token(drop=[claim]))


@pytest.mark.parametrize(
    "iss", ["https://evil.example.com/application/o/fortemi/", "{issuer_without_slash}"]
)
async def test_token_from_another_issuer_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, iss: str
) -> None:
    iss = iss.format(issuer_without_slash=idp.issuer.rstrip("/"))

    with refused("Invalid issuer"):
        await validator.validate(idp.access_token(claims={"iss": iss}))


@pytest.mark.parametrize("aud", ["another-app", ["another-app", "grafana"], []])
async def test_token_for_another_audience_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, aud: object
) -> None:
    with refused("[Aa]udience|aud"):
        await validator.validate(idp.access_token(claims={"aud": aud}))


async def test_audience_list_containing_ours_is_accepted(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    token = idp.access_token(claims={"aud": ["grafana", AUDIENCE]})

    assert (await validator.validate(token)).sub


@pytest.mark.parametrize("sub", ["", 42, ["a"]])
async def test_token_whose_sub_is_not_a_non_empty_string_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, sub: object
) -> None:
    with refused("[Ss]ub"):
        await validator.validate(idp.access_token(claims={"sub": sub}))


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": NOW - 30}, "expired"),
        ({"exp": NOW - 3600}, "expired"),
        ({"nbf": NOW + 31}, "not valid yet"),
        ({"iat": NOW + 31}, "issued in the future"),
    ],
)
async def test_token_outside_its_validity_beyond_the_leeway_is_refused(
    idp: OidcProviderDouble, at_now: TokenValidator, claims: dict[str, Any], reason: str
) -> None:
    with refused(reason):
        await at_now.validate(idp.access_token(now=NOW, claims=claims))


@pytest.mark.parametrize("claims", [{"exp": NOW - 29}, {"nbf": NOW + 30}, {"iat": NOW + 30}])
async def test_token_within_the_leeway_is_accepted(
    idp: OidcProviderDouble, at_now: TokenValidator, claims: dict[str, Any]
) -> None:
    assert (await at_now.validate(idp.access_token(now=NOW, claims=claims))).sub


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": "tomorrow"}, "exp is not a NumericDate"),
        ({"exp": True}, "exp is not a NumericDate"),
        ({"exp": float("inf")}, "exp is not a finite NumericDate"),
        ({"exp": 10**30}, "exp is out of range"),
        ({"iat": "yesterday"}, "iat is not a NumericDate"),
        ({"nbf": [NOW]}, "nbf is not a NumericDate"),
    ],
)
async def test_token_with_a_malformed_date_is_refused(
    idp: OidcProviderDouble, at_now: TokenValidator, claims: dict[str, Any], reason: str
) -> None:
    with refused(reason):
        await at_now.validate(idp.access_token(now=NOW, claims=claims))


# -- access token, not ID token (RFC 9068) ------------------------------------------------


@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "JWT", "jwt", "AT+JWT", None])
async def test_token_typed_as_an_access_token_or_untyped_is_accepted(
    idp: OidcProviderDouble, validator: TokenValidator, typ: str | None
) -> None:
    assert (await validator.validate(idp.access_token(headers={"typ": typ}))).sub


@pytest.mark.parametrize("typ", ["JWE", "dpop+jwt", "logout+jwt", "secevent+jwt", 1, ["JWT"]])
async def test_token_of_another_type_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, typ: object
) -> None:
    with refused("not an access token"):
        await validator.validate(idp.access_token(headers={"typ": typ}))


async def test_authentik_id_token_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    # Same issuer, same keys, and aud is the client id, which is also our audience; azp
    # is added so that only the ID-token markers can tell it apart.
    id_token = idp.id_token(idp.access_token(), claims={"azp": idp.client_id})

    with refused("ID token .*nonce, at_hash"):
        await validator.validate(id_token)


@pytest.mark.parametrize("marker", ["nonce", "at_hash", "c_hash"])
async def test_token_carrying_an_id_token_marker_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, marker: str
) -> None:
    with refused(f"ID token .*{marker}"):
        await validator.validate(idp.access_token(claims={marker: "x"}))


async def test_jwt_typed_token_without_azp_is_refused_when_azp_is_required(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    with refused("no azp"):
        await validator.validate(idp.access_token(drop=["azp"]))


async def test_at_jwt_typed_token_without_azp_is_accepted(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    principal = await validator.validate(idp.access_token(drop=["azp"], headers={"typ": "at+jwt"}))

    assert principal.client_id is None


async def test_token_without_azp_is_accepted_when_azp_is_not_required(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    validator = validator_for(idp, http, tmp_path, oidc_require_azp=False)

    assert (await validator.validate(idp.access_token(drop=["azp"]))).client_id is None


# -- claims to principal -------------------------------------------------------------------


async def test_keycloak_style_nested_roles_and_scope_string_permissions_are_read(
    idp: OidcProviderDouble, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    validator = validator_for(
        idp,
        http,
        tmp_path,
        OIDC_ROLES_CLAIM="realm_access.roles",
        OIDC_PERMISSIONS_CLAIM="scope",
    )
    token = idp.access_token(
        claims={"realm_access": {"roles": ["admin", "user"]}, "scope": "openid notes:read"}
    )

    principal = await validator.validate(token)

    assert principal.roles == {"admin", "user"}
    assert principal.permissions == {"openid", "notes:read"}


async def test_claims_of_unexpected_shapes_become_empty_sets_not_errors(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    token = idp.access_token(claims={"groups": 42, "roles": {"admin": True}}, drop=["permissions"])

    principal = await validator.validate(token)

    assert principal.groups == principal.roles == principal.permissions == frozenset()
