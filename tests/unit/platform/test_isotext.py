"""IsoTimes: a column of ISO texts that reads as datetimes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fortemi.platform.isotext import IsoTimes


def test_iso_times_slice_to_iso_times_and_index_like_a_list() -> None:
    texts = ["2026-12-01T08:10:27+00:00", "2026-12-01T08:10:27.000001+00:00"]
    times = IsoTimes(texts)
    assert len(times) == 2
    assert times[-1] == datetime(2026, 12, 1, 8, 10, 27, 1, tzinfo=UTC)
    assert isinstance(times[1:], IsoTimes)
    assert times[1:].texts == texts[1:]
    with pytest.raises(IndexError):
        times[2]
