"""The pieces of GraphQL over HTTP: media types, bodies in, bodies out."""

from __future__ import annotations

import json

import pytest

from fortemi.graphql.http import (
    GRAPHQL_RESPONSE_JSON,
    JSON,
    MalformedBody,
    ResponseTooLarge,
    decode_body,
    encode_bytes_within,
    preferred_media_type,
)


def test_encoding_within_the_limit_is_exactly_compact_json() -> None:
    deep: object = {"leaf": [1, 2.5, None]}
    for _ in range(40):
        deep = {"k": deep}
    data = {
        "data": {"notes": {"edges": [{"node": {"content": 'é\u2028"x"', "tags": []}}] * 3}},
        "errors": [{"message": "m", "path": ["a", 0], "extensions": {"code": "X"}}],
        "deep": deep,
        "flags": [True, False, {}],
    }
    assert encode_within(data, 10_000) == _compact(data)


def test_an_oversized_response_is_abandoned() -> None:
    item = {"content": "x" * 1000}
    with pytest.raises(ResponseTooLarge):
        encode_within({"data": {"items": [item] * 1_000_000}}, 50_000)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("text/html", JSON),
        (GRAPHQL_RESPONSE_JSON, GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0, application/json", JSON),
        (f"application/json;q=0.8, {GRAPHQL_RESPONSE_JSON}", GRAPHQL_RESPONSE_JSON),
        (f"*/*, {GRAPHQL_RESPONSE_JSON}", JSON),
        (f"{GRAPHQL_RESPONSE_JSON}; charset=utf-8, */*;q=0.1", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=nonsense", JSON),
    ],
)
def test_the_media_type_follows_accept(accept: str | None, expected: str) -> None:
    assert preferred_media_type(accept) == expected


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"\xff\xfe", "BAD_REQUEST"),
        (b"{", "BAD_REQUEST"),
        (b"[" * 100_000 + b"]" * 100_000, "BAD_REQUEST"),
        (b'{"n": ' + b"9" * 5000 + b"}", "BAD_USER_INPUT"),
    ],
    ids=["not utf-8", "not json", "too deep", "too many digits"],
)
def test_unreadable_bodies_are_client_errors(raw: bytes, code: str) -> None:
    with pytest.raises(MalformedBody) as refused:
        decode_body(raw)
    assert refused.value.code == code


def test_lists_are_encoded_in_runs_and_an_oversized_one_stops_within_a_run() -> None:
    small = [{"id": i, "title": f"note {i}"} for i in range(5000)]
    mixed = [*small[:10], {"content": "y" * 100_000}, *small[:10]]
    cases: list[dict[str, object]] = [
        {"data": {"nodes": small}},
        {"data": {"nodes": mixed}},
        {"data": []},
    ]
    for data in cases:
        assert encode_within(data, 10_000_000) == _compact(data)
    whole = len(_compact({"data": {"nodes": small}}))
    with pytest.raises(ResponseTooLarge):
        encode_within({"data": {"nodes": small}}, whole - 1)
    assert encode_within({"data": {"nodes": small}}, whole).endswith("]}}")


@pytest.mark.parametrize(
    "data",
    [
        {"title": 'caf\u00e9 \u2028 \U0001f600 \x01 "q" \\ /', "n": [0.1, -0.0, 1e300, 3]},
        {"big": 2**70},  # past orjson's 64 bits: the standard encoder writes it
        {"data": {"1": {"2": None}}, "nested": [[], {}, [True]]},
    ],
    ids=["non-ascii", "big integer", "nesting"],
)
def test_the_fast_encoder_writes_the_standard_encoders_utf8_text(
    data: dict[str, object],
) -> None:
    assert encode_within(data, 10_000) == _compact(data)


def test_non_ascii_counts_its_utf8_bytes_against_the_limit() -> None:
    data = {"t": "\u00e9" * 100}  # 200 bytes of UTF-8
    text = encode_within(data, 208)
    assert text == '{"t":"' + "\u00e9" * 100 + '"}'
    assert len(text.encode()) == 208
    with pytest.raises(ResponseTooLarge):
        encode_within(data, 207)


def test_a_lone_surrogate_goes_out_escaped_so_the_body_is_still_utf8() -> None:
    data = {"t": "a\ud800b \u00e9"}  # orjson refuses it; the standard encoder escapes
    text = encode_within(data, 10_000)
    assert text == json.dumps(data, separators=(",", ":"))
    assert json.loads(text.encode()) == data


def _compact(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def encode_within(data: object, limit: int) -> str:
    """The body as text, checked to be UTF-8."""
    return encode_bytes_within(data, limit).decode()
