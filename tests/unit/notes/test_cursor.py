"""Page cursors: what is encoded decodes to the same position; nothing else decodes."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID, uuid4

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.cursor import decode_cursor, encode_cursor


@pytest.mark.parametrize(
    "created_at",
    [
        datetime(2024, 5, 17, 12, 30, 1, 123456, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-7))),
        datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ],
)
def test_a_cursor_decodes_to_the_exact_position_it_encodes(created_at: datetime) -> None:
    note_id = uuid4()
    cursor = encode_cursor(created_at, note_id)
    decoded_at, decoded_id = decode_cursor(cursor)
    assert (decoded_at, decoded_id) == (created_at, note_id)
    assert decoded_at.utcoffset() == created_at.utcoffset()


def test_a_cursor_is_url_safe_and_unpadded() -> None:
    cursor = encode_cursor(datetime(2024, 1, 1, tzinfo=UTC), UUID(int=2**128 - 1))
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _b64(payload: object) -> str:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


_ID = str(UUID(int=7))


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("", id="empty"),
        pytest.param("abc$", id="not-base64url"),
        pytest.param("a+b/", id="standard-base64-alphabet"),
        pytest.param("A", id="impossible-length"),
        pytest.param(_b64(b"\x80\x81"), id="not-ascii"),
        pytest.param(_b64(b"{not json"), id="not-json"),
        pytest.param(_b64(42), id="json-number"),
        pytest.param(_b64(["n1", "2024-01-01T00:00:00+00:00"]), id="too-short"),
        pytest.param(_b64(["n1", "2024-01-01T00:00:00+00:00", _ID, 1]), id="too-long"),
        pytest.param(_b64(["n0", "2024-01-01T00:00:00+00:00", _ID]), id="unknown-tag"),
        pytest.param(_b64(["n1", "2024-01-01T00:00:00", _ID]), id="naive-time"),
        pytest.param(_b64(["n1", "tomorrow", _ID]), id="not-a-time"),
        pytest.param(_b64(["n1", "2024-01-01T00:00:00+00:00", "x"]), id="not-a-uuid"),
        pytest.param(_b64(["n1", 20240101, _ID]), id="time-not-a-string"),
        pytest.param(_b64(["n1", "2024-01-01T00:00:00+00:00", None]), id="id-not-a-string"),
        pytest.param(_b64({"n1": 1, "t": 2, "i": 3}), id="object"),
        pytest.param("A" * 300, id="too-long-to-be-ours"),
    ],
)
def test_anything_but_a_real_cursor_is_bad_input_about_after(cursor: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        decode_cursor(cursor)
    assert caught.value.extensions == {"field": "after"}


def test_a_non_string_cursor_is_bad_input() -> None:
    with pytest.raises(BadUserInput):
        decode_cursor(123)  # type: ignore[arg-type]
