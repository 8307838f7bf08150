from __future__ import annotations

import pytest

from fortemi.webhooks.transport import MAX_RETRY_AFTER_SECONDS, retry_after

NOW = 1_767_225_600.0  # Thu, 01 Jan 2026 00:00:00 GMT


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        ("30", 30.0),
        (" 120 ", 120.0),
        ("0000005", 5.0),
        ("3600", 3600.0),
        ("3601", MAX_RETRY_AFTER_SECONDS),
        ("9" * 50, MAX_RETRY_AFTER_SECONDS),
    ],
)
def test_retry_after_reads_delay_seconds_capped_at_an_hour(value: str, seconds: float) -> None:
    assert retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("Thu, 01 Jan 2026 00:01:30 GMT", 90.0),
        ("Thu, 01 Jan 2026 00:01:30 -0000", 90.0),
        ("Thu, 01 Jan 2026 01:01:30 +0100", 90.0),
        ("Wed, 31 Dec 2025 23:00:00 GMT", 0.0),  # in the past: retry now
        ("Fri, 02 Jan 2026 00:00:00 GMT", MAX_RETRY_AFTER_SECONDS),
    ],
)
def test_retry_after_reads_an_http_date_relative_to_now(value: str, seconds: float) -> None:
    assert retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "soon",
        "-5",
        "1.5",
        "\uff11\uff12",
        "Thu, 99 Foo 2026 00:00:00 GMT",
        "Thu, 01 Jan 2026 00:00:00 +99999999",
    ],
)
def test_retry_after_ignores_what_it_cannot_read(value: str | None) -> None:
    assert retry_after(value, now=NOW) is None
