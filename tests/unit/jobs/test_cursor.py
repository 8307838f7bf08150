"""Job page cursors: what is encoded decodes to the same position; nothing else decodes,
not even a note cursor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.platform.jobs.cursor import decode_cursor, encode_cursor
from fortemi.platform.notes.cursor import encode_cursor as encode_note_cursor


@pytest.mark.parametrize(
    "created_at",
    [
        datetime(2024, 5, 17, 12, 30, 1, 123456, tzinfo=UTC),
        datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ],
)
def test_a_cursor_decodes_to_the_position_it_encodes(created_at: datetime) -> None:
    job_id = uuid4()
    assert decode_cursor(encode_cursor(created_at, job_id)) == (created_at, job_id)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "abc$",
        "x" * 300,
        encode_note_cursor(datetime(2024, 1, 1, tzinfo=UTC), uuid4()),
        "WyJqMSIsIjIwMjQtMDEtMDFUMDA6MDA6MDAiLCIwMDAwMDAwMC0wMDAwLTAwMDAtMDAwMC0wMDAwMDAwMDAwMDAiXQ",
    ],
    ids=["empty", "not-base64url", "too-long", "note-cursor", "naive-time"],
)
def test_anything_but_a_job_cursor_is_bad_user_input(cursor: str) -> None:
    with pytest.raises(BadUserInput) as caught:
        decode_cursor(cursor)
    assert caught.value.extensions == {"field": "after"}
