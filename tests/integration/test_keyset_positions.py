"""PostgreSQL agrees with ``KeysetCursor.through``: a row is strictly before the position
past a cursor exactly when it is at or before the cursor's own position, so a page read
from ``through`` starts with the cursor's row if it is still listed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from fortemi.platform.database import Database
from fortemi.platform.sql import KeysetCursor

AT = datetime(2024, 5, 17, 12, 30, 1, 123456, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
GREATEST = 2**128 - 1


@pytest.mark.parametrize(
    "item_id",
    [
        UUID(int=7),
        UUID(int=0x00FF_FFFF_FFFF_FFFF_FFFF_FFFF_FFFF_FFFF),  # the successor carries into byte 0
        UUID(int=2**64 - 1),
        UUID("9f1c2b3a-4d5e-4f60-8a7b-ffffffffffff"),
        UUID(int=GREATEST),
    ],
    ids=["small", "carry-to-first-byte", "carry-across-halves", "random-like", "greatest"],
)
async def test_rows_before_the_position_past_a_cursor_are_those_at_or_before_it(
    db: Database, item_id: UUID
) -> None:
    position = (AT, item_id)
    past = KeysetCursor.through(position)
    assert past is not None
    neighbours = [
        (at, UUID(int=max(0, min(GREATEST, item_id.int + step))))
        for at in (AT - MICROSECOND, AT, AT + MICROSECOND)
        for step in (-1, 0, 1)
    ] + [(AT, UUID(int=0)), (AT, UUID(int=GREATEST))]
    async with db.connection() as conn:
        for row in neighbours:
            compared = await conn.fetchrow(
                "SELECT ($1::timestamptz, $2::uuid) < ($3::timestamptz, $4::uuid), "
                "($1::timestamptz, $2::uuid) <= ($5::timestamptz, $6::uuid)",
                *row,
                *past,
                *position,
            )
            assert compared is not None
            before_past, at_or_before = compared
            assert before_past == at_or_before, row
