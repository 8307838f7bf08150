"""Records are brought to the form PostgreSQL returns, or refused before they are queued."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from fortemi.auth.audit.chain import stored_form
from fortemi.auth.decision import Reason
from fortemi.platform.errors import BadUserInput
from tests.unit.audit.test_chain import RECORD


def test_a_valid_record_is_unchanged() -> None:
    assert stored_form(RECORD) == RECORD


def test_time_is_stored_in_utc() -> None:
    local = RECORD.at.astimezone(timezone(timedelta(hours=9)))
    stored = stored_form(replace(RECORD, at=local))
    assert stored.at.utcoffset() == timedelta(0)
    assert stored.at == RECORD.at


def test_a_reason_enum_is_stored_as_its_plain_value() -> None:
    stored = stored_form(replace(RECORD, reason=Reason.EXPLICIT_DENY, decision="deny"))
    assert type(stored.reason) is str
    assert stored.reason == "explicit_deny"


@pytest.mark.parametrize(
    ("details", "stored"),
    [
        pytest.param({"x": 1e20}, {"x": 100000000000000000000}, id="float-past-1e16-to-int"),
        pytest.param({"x": -1.5e300}, {"x": -15 * 10**299}, id="huge-float-exactly"),
        pytest.param({"x": -0.0}, {"x": 0.0}, id="negative-zero"),
        pytest.param({"x": 1.5e-7}, {"x": 1.5e-7}, id="small-float-kept"),
        pytest.param({"x": (1, "a")}, {"x": [1, "a"]}, id="tuple-to-list"),
        pytest.param({"x": {"y": [True, None]}}, {"x": {"y": [True, None]}}, id="nested"),
    ],
)
def test_details_are_normalised_to_what_jsonb_returns(
    details: dict[str, Any], stored: dict[str, Any]
) -> None:
    result = stored_form(replace(RECORD, details=details)).details
    assert result == stored
    assert repr(result) == repr(stored)  # types too: 1e20 and its int are == but not alike


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"at": datetime(2024, 1, 1)}, id="naive-time"),
        pytest.param({"decision": "maybe"}, id="decision-not-allow-or-deny"),
        pytest.param({"user_id": 7}, id="non-string-field"),
        pytest.param({"details": {"x": float("nan")}}, id="nan"),
        pytest.param({"details": {"x": float("inf")}}, id="infinity"),
        pytest.param({"details": {1: "x"}}, id="non-string-key"),
        pytest.param({"details": {"x": {1, 2}}}, id="set-is-not-json"),
        pytest.param({"details": ["x"]}, id="details-not-an-object"),
    ],
)
def test_what_only_a_programming_error_produces_is_a_value_error(change: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="audit"):
        stored_form(replace(RECORD, **change))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"resource_name": "a\x00b"}, "resource_name", id="nul-in-text"),
        pytest.param({"groups": ("ok", "\ud800")}, "groups", id="lone-surrogate-in-group"),
        pytest.param({"details": {"q": "a\x00"}}, "details.q", id="nul-in-details"),
        pytest.param({"details": {"\x00": 1}}, "details", id="nul-in-details-key"),
    ],
)
def test_text_postgresql_cannot_store_is_bad_user_input(change: dict[str, Any], field: str) -> None:
    with pytest.raises(BadUserInput) as raised:
        stored_form(replace(RECORD, **change))
    assert raised.value.extensions["field"] == field
