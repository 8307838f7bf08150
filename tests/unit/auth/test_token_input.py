"""Untrusted input at the edge: the Authorization header and malformed tokens."""

from __future__ import annotations

import base64

import pytest

from fortemi.auth.tokens import MAX_TOKEN_LENGTH, TokenValidator, bearer_token
from tests.support.oidc_double import OidcProviderDouble, b64url

from .helpers import refused


@pytest.mark.parametrize(
    "header",
    ["Bearer abc.def.ghi", "bearer abc.def.ghi", "BEARER abc.def.ghi", "  Bearer  abc.def.ghi "],
)
def test_bearer_token_is_taken_from_the_header_whatever_the_scheme_case(header: str) -> None:
    assert bearer_token(header) == "abc.def.ghi"


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "no Authorization header"),
        ("", "no Authorization header"),
        ("   ", "no Authorization header"),
        ("Basic dXNlcjpwYXNz", "'Basic' is not Bearer"),
        ("Token abc", "not Bearer"),
        ("Bearer", "exactly one token"),
        ("Bearer ", "exactly one token"),
        ("Bearer abc def", "exactly one token"),
    ],
)
def test_bearer_token_refuses_a_missing_empty_or_foreign_credential(
    header: str | None, reason: str
) -> None:
    with refused(reason):
        bearer_token(header)


def _segment(raw: bytes) -> str:
    return b64url(raw)


HEADER = _segment(b'{"alg":"RS256","typ":"JWT"}')
PAYLOAD = _segment(b'{"sub":"x"}')
KID_NOT_A_STRING = _segment(b'{"alg":"RS256","kid":5}')
STANDARD_BASE64 = base64.b64encode(b'{"alg":"RS256","k":"???>>>"}').decode()  # has / and +

MALFORMED = {
    "empty": "",
    "one segment": "abc",
    "two segments": f"{HEADER}.{PAYLOAD}",
    "four segments": f"{HEADER}.{PAYLOAD}.c2ln.extra",
    "jwe (five segments)": f"{HEADER}.a.b.c.d",
    "not base64url": "!!!.###.$$$",
    "standard base64 with padding junk": f"{HEADER}===.{PAYLOAD}.c2ln",
    "header not json": f"{_segment(b'not json')}.{PAYLOAD}.c2ln",
    "header a json array": f"{_segment(b'[1,2]')}.{PAYLOAD}.c2ln",
    "header deeply nested": f"{_segment(b'[' * 5000 + b']' * 5000)}.{PAYLOAD}.c2ln",
    "header without alg": f"{_segment(b'{}')}.{PAYLOAD}.c2ln",
    "kid not a string": f"{KID_NOT_A_STRING}.{PAYLOAD}.c2ln",
    "non-ascii": "é.é.é",
    "whitespace inside": f"{HEADER}. {PAYLOAD}.c2ln",
    "over 16 KiB": f"{HEADER}.{'A' * MAX_TOKEN_LENGTH}.c2ln",
    "base64 but not base64url": f"{STANDARD_BASE64}.{PAYLOAD}.c2ln",
}


@pytest.mark.parametrize("token", MALFORMED.values(), ids=MALFORMED.keys())
async def test_malformed_token_is_refused_before_any_key_is_fetched(
    idp: OidcProviderDouble, validator: TokenValidator, token: str
) -> None:
    with refused("."):
        await validator.validate(token)
    assert idp.jwks_requests == 0


@pytest.mark.parametrize(
    "payload",
    [b"not json", b"[1,2,3]", b'"a string"', b"{" * 3000, b"\xff\xfe"],
    ids=["not json", "json array", "json string", "unbalanced", "not utf-8"],
)
async def test_validly_signed_token_with_a_malformed_payload_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator, payload: bytes
) -> None:
    header = _segment(f'{{"alg":"RS256","kid":"{idp.signing_key.kid}","typ":"JWT"}}'.encode())
    signing_input = f"{header}.{_segment(payload)}"
    signature = idp.signing_key.signature(signing_input.encode(), "RS256")

    with refused("."):
        await validator.validate(f"{signing_input}.{_segment(signature)}")


async def test_validly_signed_token_over_16_kib_is_refused(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    token = idp.access_token(groups=[f"group-{n:05}" for n in range(1500)])
    assert len(token) > MAX_TOKEN_LENGTH

    with refused("longer than 16384"):
        await validator.validate(token)


async def test_validly_signed_token_just_under_16_kib_is_accepted(
    idp: OidcProviderDouble, validator: TokenValidator
) -> None:
    groups = [f"group-{n:05}" for n in range(820)]
    token = idp.access_token(groups=groups)
    assert MAX_TOKEN_LENGTH - 512 < len(token) <= MAX_TOKEN_LENGTH

    assert len((await validator.validate(token)).groups) == 820
