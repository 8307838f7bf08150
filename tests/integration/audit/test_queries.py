"""Auditors' queries: filters, keyset pages, bucketed counts, and the three questions."""

from __future__ import annotations

import base64
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fortemi.auth.audit import (
    AuditBucket,
    AuditFilter,
    AuditWriter,
    list_entries,
    stats,
)
from fortemi.auth.audit import repository as audit_repository
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from tests.integration.audit.helpers import BASE_TIME, record

H = timedelta(hours=1)
# (at, user, groups, resource type, name, memory, action, decision, reason)
# fmt: off
ROWS: list[tuple[Any, ...]] = [
    (BASE_TIME, "alice", ("eng",), "project", "poimen", "main", "read", "allow",
     "in_allowed_group"),
    (BASE_TIME + H, "bob", ("ops",), "project", "poimen", "main", "write", "deny",
     "not_in_allowed_groups"),
    (BASE_TIME + 25 * H, "alice", ("eng", "admins"), "memory", "main", "main", "admin", "allow",
     "explicit_grant"),
    (BASE_TIME + 26 * H, "carol", (), "skill", "SKILL-x", None, "read", "deny",
     "no_policy_default_deny"),
    (BASE_TIME + 49 * H, "bob", ("ops", "eng"), "project", "other", "side", "read", "allow",
     "in_allowed_group"),
]
# fmt: on


def _record(i: int) -> Any:
    at, user, groups, rtype, name, memory, action, decision, reason = ROWS[i]
    return record(
        at=at, user_id=user, groups=groups, resource_type=rtype, resource_name=name,
        memory=memory, action=action, decision=decision, reason=reason, details={"i": i},
    )  # fmt: skip


@pytest.fixture
async def rows(writer: AuditWriter) -> None:
    for i in range(len(ROWS)):
        await writer.record([_record(i)])


async def _indexes(db: Database, where: AuditFilter) -> list[int]:
    page = await list_entries(db, where, first=100)
    return [entry.record.details["i"] for _, entry in page.items]


def _describe(where: AuditFilter) -> str:
    chosen = [f.name for f in fields(where) if getattr(where, f.name) is not None]
    return "+".join(chosen) or "no-filter"


_FILTER_CASES: list[tuple[AuditFilter, list[int]]] = [
    (AuditFilter(), [4, 3, 2, 1, 0]),
    (AuditFilter(since=BASE_TIME + 25 * H), [4, 3, 2]),
    (AuditFilter(until=BASE_TIME + 25 * H), [1, 0]),
    (AuditFilter(since=BASE_TIME + H, until=BASE_TIME + 26 * H), [2, 1]),
    (AuditFilter(user_id="alice"), [2, 0]),
    (AuditFilter(group="eng"), [4, 2, 0]),
    (AuditFilter(resource_type="project"), [4, 1, 0]),
    (AuditFilter(resource_name="poimen"), [1, 0]),
    (AuditFilter(memory="main"), [2, 1, 0]),
    (AuditFilter(action="read"), [4, 3, 0]),
    (AuditFilter(decision="deny"), [3, 1]),
    (AuditFilter(reason="in_allowed_group"), [4, 0]),
    (AuditFilter(decision="allow", group="ops"), [4]),
    (AuditFilter(user_id="nobody"), []),
]


@pytest.mark.parametrize(
    ("where", "expected"),
    [pytest.param(where, expected, id=_describe(where)) for where, expected in _FILTER_CASES],
)
async def test_each_filter_selects_exactly_its_rows_newest_first(
    audit_db: Database, rows: None, where: AuditFilter, expected: list[int]
) -> None:
    assert await _indexes(audit_db, where) == expected


async def test_pages_walk_every_row_once_newest_first(
    audit_db: Database, writer: AuditWriter
) -> None:
    await writer.record([record(details={"i": i}) for i in range(7)])
    seen: list[int] = []
    flags: list[bool] = []
    after = None
    for _ in range(4):
        page = await list_entries(audit_db, first=3, after=after)
        seen += [entry.record.details["i"] for _, entry in page.items]
        flags.append(page.has_next_page)
        after = page.end_cursor
        if not page.has_next_page:
            break
    assert seen == [6, 5, 4, 3, 2, 1, 0]
    assert flags == [True, True, False]


async def test_pages_keep_their_filter(audit_db: Database, rows: None) -> None:
    first = await list_entries(audit_db, AuditFilter(decision="allow"), first=2)
    second = await list_entries(
        audit_db, AuditFilter(decision="allow"), first=2, after=first.end_cursor
    )
    assert [e.record.details["i"] for _, e in first.items + second.items] == [4, 2, 0]
    assert (first.has_next_page, second.has_next_page) == (True, False)


async def test_first_is_capped_and_zero_only_says_whether_more_exist(
    audit_db: Database, writer: AuditWriter
) -> None:
    await writer.record([record() for _ in range(501)])
    capped = await list_entries(audit_db, first=10_000)
    assert (len(capped.items), capped.has_next_page) == (500, True)
    empty = await list_entries(audit_db, first=0)
    assert (empty.items, empty.has_next_page, empty.end_cursor) == ([], True, None)
    default = await list_entries(audit_db)
    assert len(default.items) == 50


@pytest.mark.parametrize("first", [-1, True, 1.5])
async def test_a_bad_first_is_bad_input(audit_db: Database, first: Any) -> None:
    with pytest.raises(BadUserInput) as raised:
        await list_entries(audit_db, first=first)
    assert raised.value.extensions["field"] == "first"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("", id="empty"),
        pytest.param("not base64!", id="not-base64url"),
        pytest.param("x" * 100, id="too-long"),
        pytest.param(_b64(b"{nope"), id="not-json"),
        pytest.param(_b64(b'["n1",5]'), id="a-notes-cursor"),
        pytest.param(_b64(b'["a1","5"]'), id="id-not-a-number"),
        pytest.param(_b64(b'["a1",true]'), id="id-a-boolean"),
        pytest.param(_b64(b'["a1",0]'), id="id-zero"),
        pytest.param(_b64(b'["a1",99999999999999999999]'), id="id-past-bigint"),
        pytest.param(_b64(b'["a1",5,6]'), id="too-long-array"),
    ],
)
async def test_a_malformed_cursor_is_bad_input(audit_db: Database, cursor: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        await list_entries(audit_db, after=cursor)
    assert raised.value.extensions["field"] == "after"


async def test_a_naive_time_in_a_filter_is_bad_input(audit_db: Database) -> None:
    with pytest.raises(BadUserInput, match="time zone"):
        await list_entries(audit_db, AuditFilter(since=datetime(2024, 1, 1)))


async def test_counts_per_day_and_per_hour(audit_db: Database, rows: None) -> None:
    day = BASE_TIME.replace(hour=0)
    assert await stats(audit_db, bucket="day") == [
        AuditBucket(start=day, count=2),
        AuditBucket(start=day + 24 * H, count=2),
        AuditBucket(start=day + 48 * H, count=1),
    ]
    by_hour = await stats(
        audit_db, AuditFilter(until=BASE_TIME + 2 * H), bucket="hour", group_by=["decision"]
    )
    assert by_hour == [
        AuditBucket(start=BASE_TIME, count=1, decision="allow"),
        AuditBucket(start=BASE_TIME + H, count=1, decision="deny"),
    ]


@pytest.mark.parametrize(
    ("bucket", "group_by", "field"),
    [
        ("week", [], "bucket"),
        ("day", ["user; DROP TABLE rbac_audit_log"], "group_by"),
        ("day", ["user_id"], "group_by"),
    ],
)
async def test_an_unknown_bucket_or_grouping_is_bad_input(
    audit_db: Database, bucket: Any, group_by: Any, field: str
) -> None:
    with pytest.raises(BadUserInput) as raised:
        await stats(audit_db, bucket=bucket, group_by=group_by)
    assert raised.value.extensions["field"] == field


async def test_too_many_buckets_is_bad_input(
    audit_db: Database, rows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_repository, "MAX_BUCKETS", 2)
    with pytest.raises(BadUserInput, match="more than 2 buckets"):
        await stats(audit_db, bucket="hour")


# -- the three auditor questions ----------------------------------------------------------


async def test_auditor_question_every_access_in_the_last_seven_days(
    audit_db: Database, writer: AuditWriter
) -> None:
    now = datetime.now(UTC)
    ages = [30 * 24 * H, 8 * 24 * H, 7 * 24 * H - H, 3 * 24 * H, H]  # written oldest first
    for i, age in enumerate(ages):
        await writer.record([record(at=now - age, details={"i": i})])
    page = await list_entries(audit_db, AuditFilter(since=now - 7 * 24 * H))
    assert [e.record.details["i"] for _, e in page.items] == [4, 3, 2]
    assert page.has_next_page is False


async def test_auditor_question_who_accessed_what(audit_db: Database, rows: None) -> None:
    answer = await stats(
        audit_db, AuditFilter(decision="allow"), bucket="day", group_by=["user", "resource"]
    )
    day = BASE_TIME.replace(hour=0)
    assert answer == [
        AuditBucket(day, 1, user_id="alice", resource_type="project", resource_name="poimen"),
        AuditBucket(day + 24 * H, 1, user_id="alice", resource_type="memory", resource_name="main"),
        AuditBucket(day + 48 * H, 1, user_id="bob", resource_type="project", resource_name="other"),
    ]


async def test_auditor_question_denied_attempts_and_why(
    audit_db: Database, rows: None, writer: AuditWriter
) -> None:
    # Two more denials for bob in the first hour: counts add up, largest first.
    await writer.record([_record(1), _record(1)])
    answer = await stats(
        audit_db, AuditFilter(decision="deny"), bucket="day", group_by=["user", "reason"]
    )
    day = BASE_TIME.replace(hour=0)
    assert answer == [
        AuditBucket(day, 3, user_id="bob", reason="not_in_allowed_groups"),
        AuditBucket(day + 24 * H, 1, user_id="carol", reason="no_policy_default_deny"),
    ]
