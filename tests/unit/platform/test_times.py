"""The one rule for a time without an offset: it is read as UTC, never as local time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.platform.times import assume_utc, optional_aware


class _NoOffset(tzinfo):
    """A zone that knows no offset: Python counts such a time as naive."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        return None


def test_a_naive_time_is_the_same_wall_time_in_utc() -> None:
    assert assume_utc(datetime(2024, 5, 1, 12, 30)) == datetime(2024, 5, 1, 12, 30, tzinfo=UTC)


def test_an_aware_time_keeps_its_offset() -> None:
    paris = datetime(2024, 5, 1, 12, 30, tzinfo=timezone(timedelta(hours=2)))

    assert assume_utc(paris).utcoffset() == timedelta(hours=2)


def test_a_zone_without_an_offset_counts_as_naive() -> None:
    moment = datetime(2024, 5, 1, 12, 30, tzinfo=_NoOffset())

    assert assume_utc(moment).utcoffset() == timedelta(0)


def test_an_absent_optional_time_stays_absent() -> None:
    assert optional_aware(None, "created_after") is None


def test_an_optional_time_is_read_as_utc() -> None:
    assert optional_aware(datetime(2024, 1, 1), "created_after") == datetime(2024, 1, 1, tzinfo=UTC)


def test_an_optional_time_that_is_not_a_time_names_its_field() -> None:
    with pytest.raises(BadUserInput, match="created_after must be a date-time"):
        optional_aware("2024-01-01", "created_after")
