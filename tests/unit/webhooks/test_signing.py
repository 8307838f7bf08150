from __future__ import annotations

import hashlib
import hmac

import pytest

from fortemi.webhooks.signing import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    new_secret,
    sign,
    signature_headers,
    verify,
)

SECRET = b"whsec-test"
BODY = b'{"type":"note.created","id":"evt_1"}'
SENT_AT = 1_767_225_600


def test_sign_is_hex_hmac_sha256_over_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET, b"1767225600." + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, SENT_AT, BODY) == f"sha256={expected}"


def test_signature_headers_carry_the_timestamp_and_its_signature() -> None:
    headers = signature_headers(SECRET, SENT_AT, BODY)
    assert headers == {
        TIMESTAMP_HEADER: "1767225600",
        SIGNATURE_HEADER: sign(SECRET, SENT_AT, BODY),
    }


@pytest.mark.parametrize("skew", [0, 299.9, -299.9, 300, -300])
def test_verify_accepts_our_signature_within_the_tolerance(skew: float) -> None:
    assert verify(
        SECRET,
        timestamp=str(SENT_AT),
        signature=sign(SECRET, SENT_AT, BODY),
        body=BODY,
        now=SENT_AT + skew,
    )


@pytest.mark.parametrize("skew", [300.1, -300.1, 86_400, -86_400])
def test_verify_rejects_stale_and_future_timestamps(skew: float) -> None:
    assert not verify(
        SECRET,
        timestamp=str(SENT_AT),
        signature=sign(SECRET, SENT_AT, BODY),
        body=BODY,
        now=SENT_AT + skew,
    )


def test_verify_honours_a_custom_tolerance() -> None:
    def verify_at(now: float) -> bool:
        return verify(
            SECRET,
            timestamp=str(SENT_AT),
            signature=sign(SECRET, SENT_AT, BODY),
            body=BODY,
            now=now,
            tolerance_seconds=30,
        )

    assert verify_at(SENT_AT + 20)
    assert not verify_at(SENT_AT + 40)


def test_verify_rejects_a_changed_body_secret_or_timestamp() -> None:
    signature = sign(SECRET, SENT_AT, BODY)
    assert not verify(
        SECRET, timestamp=str(SENT_AT), signature=signature, body=BODY + b" ", now=SENT_AT
    )
    assert not verify(b"other", timestamp=str(SENT_AT), signature=signature, body=BODY, now=SENT_AT)
    # A replay with a fresh timestamp header fails: the timestamp is inside the MAC.
    assert not verify(
        SECRET, timestamp=str(SENT_AT + 60), signature=signature, body=BODY, now=SENT_AT + 60
    )


@pytest.mark.parametrize(
    "timestamp",
    [
        "",
        "abc",
        "-1",
        "+1767225600",
        "1767225600.0",
        " 1767225600",
        "\uff11\uff17\uff16\uff17\uff12\uff12\uff15\uff16\uff10\uff10",  # fullwidth digits
        "9" * 40,
    ],
)
def test_verify_returns_false_for_a_malformed_timestamp(timestamp: str) -> None:
    signature = sign(SECRET, SENT_AT, BODY)
    assert not verify(SECRET, timestamp=timestamp, signature=signature, body=BODY, now=SENT_AT)


@pytest.mark.parametrize(
    "signature",
    [
        "",
        "sha256=",
        "sha256=zz",
        "md5=abc",
        "sha256=é",
        "sha256=\x00",
        sign(SECRET, SENT_AT, BODY).removeprefix("sha256="),
        sign(SECRET, SENT_AT, BODY).upper(),
        sign(SECRET, SENT_AT, BODY) + "00",
    ],
)
def test_verify_returns_false_for_a_malformed_or_wrong_signature(signature: str) -> None:
    assert not verify(SECRET, timestamp=str(SENT_AT), signature=signature, body=BODY, now=SENT_AT)


def test_verify_checks_the_timestamp_text_that_was_signed() -> None:
    # A sender that zero-pads its timestamp signs the padded text; we verify that text.
    mac = hmac.new(SECRET, b"01767225600." + BODY, hashlib.sha256).hexdigest()
    assert verify(
        SECRET, timestamp="01767225600", signature=f"sha256={mac}", body=BODY, now=SENT_AT
    )


def test_new_secret_is_url_safe_and_fresh_each_time() -> None:
    first, second = new_secret(), new_secret()
    assert first != second
    assert len(first) >= 43  # 32 random bytes, base64url without padding
    assert set(first) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
