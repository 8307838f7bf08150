"""How a time without an offset is read: as UTC, the zone every stored time is in.

Never as the server's local zone, which would make the same request mean different
instants on differently configured hosts. Every place that accepts a time (GraphQL
arguments, CLI options, HTTP dates) goes through here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fortemi.platform.errors import BadUserInput

__all__ = ["assume_utc", "optional_aware"]


def assume_utc(moment: datetime) -> datetime:
    """``moment`` when it carries an offset, else the same wall time read as UTC.

    Naive in Python's sense: no ``tzinfo``, or one whose ``utcoffset`` is None.
    """
    return moment if moment.utcoffset() is not None else moment.replace(tzinfo=UTC)


def optional_aware(value: object, field: str) -> datetime | None:
    """An input field that may hold a date-time: None stays None, a naive one is UTC.

    Anything else is :class:`BadUserInput` naming ``field``.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise BadUserInput(f"{field} must be a date-time", field=field)
    return assume_utc(value)
