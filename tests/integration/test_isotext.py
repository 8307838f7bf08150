"""Times written as text by PostgreSQL (fortemi.platform.isotext) are exactly what asyncpg's
decoded ``datetime`` gives with ``isoformat()``, in any session time zone, and parse back
to the same ``datetime``."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from fortemi.platform.database import Database
from fortemi.platform.isotext import IsoTimes, iso_text_sql

# Zones with odd offsets: quarter hours, half hours, negative, and Amsterdam, whose offset
# before 1937 had seconds (+00:19:32), so that a zone-dependent truncation would show.
ZONES = ["UTC", "Asia/Kathmandu", "America/St_Johns", "Pacific/Chatham", "Europe/Amsterdam"]

_FIXED = [
    datetime(2026, 12, 1, 8, 10, 27, tzinfo=UTC),  # microsecond 0: no fraction at all
    datetime(2026, 12, 1, 8, 10, 27, 1, tzinfo=UTC),
    datetime(2026, 12, 1, 8, 10, 27, 100000, tzinfo=UTC),  # trailing zeros kept
    datetime(2026, 12, 1, 8, 10, 27, 999999, tzinfo=UTC),
    datetime(2000, 1, 1, tzinfo=UTC),  # PostgreSQL's epoch
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1900, 6, 1, 12, 0, 0, 250000, tzinfo=UTC),  # Amsterdam at +00:19:32
    datetime(5, 3, 4, 5, 6, 7, tzinfo=UTC),  # a year of one digit, zero-padded
    # (0001-01-01 and 9999-12-31T23:59:59.999999 UTC are asyncpg's -infinity and infinity.)
    datetime(1, 1, 2, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 58, 999999, tzinfo=UTC),
    datetime(2024, 2, 29, 23, 59, 59, 500, tzinfo=UTC),
]

# Fixed fragments only (the expression of a column name), composed once.
_AS_TEXT = "".join(
    ("SELECT t, ", iso_text_sql("t"), " AS text FROM unnest($1::timestamptz[]) AS u(t)")
)
_INFINITIES = "".join(
    (
        "SELECT t, ",
        iso_text_sql("t"),
        " AS text, ",
        iso_text_sql("NULL::timestamptz"),
        " AS none FROM unnest('{infinity,-infinity}'::timestamptz[]) AS u(t)",
    )
)


def _moments() -> list[datetime]:
    rng = random.Random(7)  # noqa: S311 - test data, not secrets
    start = datetime(1800, 1, 1, tzinfo=UTC)
    span = int((datetime(2200, 1, 1, tzinfo=UTC) - start).total_seconds())
    drawn = [
        start + timedelta(seconds=rng.randrange(span), microseconds=rng.randrange(1_000_000))
        for _ in range(400)
    ]
    whole = [moment.replace(microsecond=0) for moment in drawn[:100]]
    return [*_FIXED, *drawn, *whole]


@pytest.mark.parametrize("zone", ZONES)
async def test_sql_text_is_the_decoded_datetimes_isoformat_in_any_session_zone(
    db: Database, zone: str
) -> None:
    moments = _moments()
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SELECT set_config('TimeZone', $1, true)", zone)
        rows = await conn.fetch(_AS_TEXT, moments)
    assert len(rows) == len(moments)
    for moment, row in zip(moments, rows, strict=True):
        assert row["t"] == moment
        assert row["text"] == row["t"].isoformat()
    times = IsoTimes([row["text"] for row in rows])
    assert list(times) == [row["t"] for row in rows]
    assert [repr(times[i]) for i in range(len(times))] == [repr(row["t"]) for row in rows]
    assert sum(1 for row in rows if row["t"].microsecond == 0) > 100


async def test_infinite_times_are_written_as_asyncpg_decodes_them(db: Database) -> None:
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SELECT set_config('TimeZone', 'Asia/Kathmandu', true)")
        rows = await conn.fetch(_INFINITIES)
    assert [row["t"] for row in rows] == [datetime.max, datetime.min]
    assert [row["text"] for row in rows] == [row["t"].isoformat() for row in rows]
    assert list(IsoTimes([row["text"] for row in rows])) == [datetime.max, datetime.min]
    assert {row["none"] for row in rows} == {None}
