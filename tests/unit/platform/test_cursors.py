"""The cursor codec shared by every list: positions round-trip, anything else is bad
input, and ``through`` names the least position past a cursor's own row."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.platform.sql import KeysetCursor, SerialCursor

AUDIT = SerialCursor("a1")


def _b64(payload: object) -> str:
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.mark.parametrize("entry_id", [1, 42, 2**63 - 2])
def test_a_serial_cursor_decodes_to_the_id_it_encodes(entry_id: int) -> None:
    assert AUDIT.decode(AUDIT.encode(entry_id)) == entry_id


def test_a_serial_cursor_keeps_the_format_clients_already_hold() -> None:
    assert AUDIT.encode(42) == _b64(["a1", 42])
    assert AUDIT.decode(_b64(["a1", 42])) == 42


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param(_b64(["a1", 0]), id="zero"),
        pytest.param(_b64(["a1", -3]), id="negative"),
        pytest.param(_b64(["a1", 2**63 - 1]), id="greatest-bigint"),
        pytest.param(_b64(["a1", True]), id="boolean"),
        pytest.param(_b64(["a1", "42"]), id="string"),
        pytest.param(_b64(["a1", 1.5]), id="float"),
        pytest.param(_b64(["a2", 42]), id="other-tag"),
        pytest.param(_b64(["a1", 42, 1]), id="too-long"),
        pytest.param(_b64(["a1"]), id="too-short"),
        pytest.param(_b64({"a1": 42}), id="object"),
        pytest.param(_b64(["n1", "2024-01-01T00:00:00+00:00", str(UUID(int=1))]), id="a-note"),
        pytest.param("%%%", id="not-base64url"),
    ],
)
def test_anything_but_a_serial_position_is_bad_input_about_after(cursor: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        AUDIT.decode(cursor)
    assert caught.value.extensions == {"field": "after"}


def test_through_a_serial_position_is_the_next_id() -> None:
    assert (SerialCursor.through(None), SerialCursor.through(41)) == (None, 42)


AT = datetime(2024, 5, 17, 12, 30, 1, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("item_id", "expected"),
    [
        (UUID(int=7), (AT, UUID(int=8))),
        (UUID(int=2**64 - 1), (AT, UUID(int=2**64))),  # a carry across the halves
        (UUID(int=2**128 - 1), (AT + timedelta(microseconds=1), UUID(int=0))),
    ],
    ids=["plain", "carry", "greatest-uuid"],
)
def test_through_a_keyset_position_is_the_least_position_past_it(
    item_id: UUID, expected: tuple[datetime, UUID]
) -> None:
    assert KeysetCursor.through((AT, item_id)) == expected
    assert KeysetCursor.through(None) is None
