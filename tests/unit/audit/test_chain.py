"""The chain's canonical encoding: stable, as documented, and unambiguous."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from blake3 import blake3
from hypothesis import given, settings
from hypothesis import strategies as st

from fortemi.auth.audit.chain import (
    canonical_bytes,
    chain_hash,
    registration_link,
    unkeyed_chain_hash,
    unkeyed_genesis_hash,
)
from fortemi.auth.audit.models import AuditRecord, Pin, Registration

KEY = bytes(range(32))

RECORD = AuditRecord(
    at=datetime(2024, 5, 17, 12, 30, 1, 123456, tzinfo=UTC),
    user_id="alice",
    groups=("eng", "ops"),
    resource_type="project",
    resource_name="poimen",
    memory="main",
    action="read",
    decision="allow",
    reason="in_allowed_group",
    policy_version="p1",
    trace_id="t-1",
    client_addr="10.0.0.1",
    job_id=None,
    details={"b": 1, "a": [1.5, "é"]},
    client_request_id="client-7",
)


def test_the_hash_is_the_documented_keyed_one_for_a_known_record() -> None:
    expected = (
        '["seg-1",1,"2024-05-17T12:30:01.123456+00:00","alice",["eng","ops"],"project",'
        '"poimen","main","read","allow","in_allowed_group","p1","t-1","10.0.0.1",null,'
        '{"a":[1.5,"é"],"b":1},"client-7"]'
    ).encode()
    link = "ab" * 32
    assert canonical_bytes("seg-1", 1, RECORD) == expected
    assert chain_hash(KEY, link, "seg-1", 1, RECORD) == (
        blake3(link.encode() + expected, key=KEY).hexdigest()
    )
    # Pinned: a change of this value is a change of the on-disk format.
    assert chain_hash(KEY, link, "seg-1", 1, RECORD) == (
        "3869b9f21f22ec8078d1fec771c379d6eb6ddb886213c26f610c1ebbbafcf576"
    )


def test_rows_from_before_keyed_chaining_keep_their_unkeyed_hash() -> None:
    genesis = blake3(b"fortemi-audit:seg-1").hexdigest()
    assert unkeyed_genesis_hash("seg-1") == genesis
    # Pinned before keyed chaining existed: the unkeyed format must not change.
    assert unkeyed_chain_hash(genesis, "seg-1", 1, replace(RECORD, client_request_id=None)) == (
        "ff3a500fdb1189c9118ce68bf2300a4af4ea63e3eae7b3eb1102d466c4a29124"
    )


def test_a_hash_recomputed_without_the_key_or_with_another_key_differs() -> None:
    keyed = chain_hash(KEY, "0" * 64, "s", 1, RECORD)
    assert unkeyed_chain_hash("0" * 64, "s", 1, RECORD) != keyed
    assert chain_hash(bytes(32), "0" * 64, "s", 1, RECORD) != keyed


def test_a_registration_link_binds_every_field() -> None:
    base = Registration(
        ordinal=2,
        segment="s",
        key_id="k" * 16,
        started_at=RECORD.at,
        pins=(Pin("r", 3, "c" * 64),),
        prev_link="d" * 64,
        link="",
    )
    link = registration_link(KEY, base.prev_link, base)
    expected = (
        '["segment",2,"s","kkkkkkkkkkkkkkkk","2024-05-17T12:30:01.123456+00:00",'
        f'[["r",3,"{"c" * 64}"]]]'
    ).encode()
    assert link == blake3(b"d" * 64 + expected, key=KEY).hexdigest()
    variants = [
        replace(base, ordinal=3),
        replace(base, segment="t"),
        replace(base, key_id="j" * 16),
        replace(base, started_at=RECORD.at + timedelta(microseconds=1)),
        replace(base, pins=()),
        replace(base, pins=(Pin("r", 4, "c" * 64),)),
    ]
    for variant in variants:
        assert registration_link(KEY, base.prev_link, variant) != link
    assert registration_link(KEY, "e" * 64, base) != link
    assert registration_link(bytes(32), base.prev_link, base) != link


def test_the_same_instant_in_another_time_zone_hashes_the_same() -> None:
    elsewhere = RECORD.at.astimezone(timezone(timedelta(hours=-7, minutes=-30)))
    assert canonical_bytes("s", 1, replace(RECORD, at=elsewhere)) == canonical_bytes("s", 1, RECORD)


def test_a_whole_second_still_carries_six_fractional_digits() -> None:
    whole = replace(RECORD, at=datetime(2024, 1, 1, tzinfo=UTC))
    assert b'"2024-01-01T00:00:00.000000+00:00"' in canonical_bytes("s", 1, whole)


_CHANGES: dict[str, Any] = {
    "at": RECORD.at + timedelta(microseconds=1),
    "user_id": "alicf",
    "groups": ("ops", "eng"),
    "resource_type": "skill",
    "resource_name": None,
    "memory": "main2",
    "action": "write",
    "decision": "deny",
    "reason": "explicit_deny",
    "policy_version": "p2",
    "trace_id": None,
    "client_addr": "10.0.0.2",
    "job_id": "j",
    "details": {"b": 1, "a": [1.5, "e"]},
    "client_request_id": "client-8",
}


@pytest.mark.parametrize("name", [f.name for f in fields(AuditRecord)])
def test_changing_any_single_field_changes_the_hash(name: str) -> None:
    changed = replace(RECORD, **{name: _CHANGES[name]})
    assert chain_hash(KEY, "0" * 64, "s", 1, changed) != chain_hash(KEY, "0" * 64, "s", 1, RECORD)


@pytest.mark.parametrize(
    ("segment", "seq", "prev"),
    [("t", 1, "0" * 64), ("s", 2, "0" * 64), ("s", 1, "1" + "0" * 63)],
)
def test_the_segment_seq_and_previous_hash_are_all_bound(segment: str, seq: int, prev: str) -> None:
    assert chain_hash(KEY, prev, segment, seq, RECORD) != chain_hash(KEY, "0" * 64, "s", 1, RECORD)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # Text moved across a field boundary, written with the separators of the encoding.
        pytest.param({"user_id": 'a","b'}, {"user_id": "a", "policy_version": "b"}, id="quote"),
        pytest.param({"groups": ("a,b",)}, {"groups": ("a", "b")}, id="comma-in-group"),
        pytest.param({"groups": ("a;b",)}, {"groups": ("a", "b")}, id="semicolon-in-group"),
        pytest.param({"groups": ()}, {"groups": ("",)}, id="no-group-vs-empty-group"),
        pytest.param({"resource_name": None}, {"resource_name": "null"}, id="null-vs-text"),
        pytest.param({"resource_name": ""}, {"resource_name": None}, id="empty-vs-null"),
        pytest.param({"trace_id": "x\\"}, {"trace_id": "x", "client_addr": "\\"}, id="backslash"),
        pytest.param({"memory": "é"}, {"memory": "e\u0301"}, id="unicode-forms"),
        pytest.param({"user_id": "a\nb"}, {"user_id": "a\\nb"}, id="newline-vs-escape"),
        pytest.param({"details": {"a": "1"}}, {"details": {"a": 1}}, id="string-vs-number"),
        pytest.param({"details": {"a,b": 1}}, {"details": {"a": 1, "b": 1}}, id="key-comma"),
    ],
)
def test_values_containing_the_encodings_separators_do_not_collide(
    left: dict[str, Any], right: dict[str, Any]
) -> None:
    a, b = replace(RECORD, **left), replace(RECORD, **right)
    assert canonical_bytes("s", 1, a) != canonical_bytes("s", 1, b)
    assert chain_hash(KEY, "0" * 64, "s", 1, a) != chain_hash(KEY, "0" * 64, "s", 1, b)


_text = st.text(max_size=12)
_optional = st.none() | _text
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_records = st.builds(
    AuditRecord,
    at=st.datetimes(timezones=st.just(UTC)),
    user_id=_text,
    groups=st.lists(_text, max_size=3).map(tuple),
    resource_type=_text,
    resource_name=_optional,
    memory=_optional,
    action=_text,
    decision=st.sampled_from(["allow", "deny"]),
    reason=_text,
    policy_version=_text,
    trace_id=_optional,
    client_addr=_optional,
    job_id=_optional,
    details=st.dictionaries(_text, _json, max_size=3),
    client_request_id=_optional,
)


@settings(database=None, deadline=None)
@given(st.text(max_size=8), st.integers(1, 2**62), _records)
def test_the_encoding_decodes_back_to_exactly_its_fields(
    segment: str, seq: int, record: AuditRecord
) -> None:
    # Decodable to the original values means no two different rows share an encoding.
    decoded = json.loads(canonical_bytes(segment, seq, record))
    assert decoded[:2] == [segment, seq]
    assert datetime.fromisoformat(decoded[2]) == record.at
    values = [getattr(record, f.name) for f in fields(AuditRecord)[1:]]
    assert decoded[3:] == [list(v) if isinstance(v, tuple) else v for v in values]


@settings(database=None, deadline=None)
@given(_records, _records)
def test_distinct_records_get_distinct_hashes(a: AuditRecord, b: AuditRecord) -> None:
    # (Python's == treats True as 1; the encoding does not, so only == records are skipped.)
    if a != b:
        assert chain_hash(KEY, "0" * 64, "s", 1, a) != chain_hash(KEY, "0" * 64, "s", 1, b)
