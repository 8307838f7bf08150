"""Backoff: exponential per failure class, jittered within its bounds, never past the cap."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fortemi.platform.jobs.backoff import DEFAULT_BASE_SECONDS, Backoff
from fortemi.platform.jobs.models import FailureClass

RETRIED = [c for c in FailureClass if c is not FailureClass.PERMANENT]


def _rng(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 - reproducible jitter, not secrets


@pytest.mark.parametrize("failure_class", RETRIED)
def test_each_class_doubles_from_its_own_base(failure_class: FailureClass) -> None:
    backoff = Backoff(jitter=0.0, cap_seconds=1e9)
    base = DEFAULT_BASE_SECONDS[failure_class]
    delays = [backoff.delay(failure_class, attempt) for attempt in range(1, 6)]
    assert delays == [base * 2**n for n in range(5)]


def test_the_classes_have_the_documented_bases() -> None:
    backoff = Backoff(jitter=0.0)
    assert {c: backoff.delay(c, 1) for c in RETRIED} == {
        FailureClass.TRANSIENT: 2.0,
        FailureClass.RATE_LIMITED: 30.0,
        FailureClass.TIMEOUT: 10.0,
        FailureClass.STALE_WORKER: 1.0,
    }


@pytest.mark.parametrize("attempt", [13, 40, 1024, 10**6])
def test_the_cap_holds_however_many_attempts(attempt: int) -> None:
    backoff = Backoff(jitter=0.0, cap_seconds=3600.0)
    assert backoff.delay(FailureClass.RATE_LIMITED, attempt) == 3600.0


def test_attempts_below_one_count_as_the_first() -> None:
    backoff = Backoff(jitter=0.0)
    assert backoff.delay(FailureClass.TIMEOUT, 0) == backoff.delay(FailureClass.TIMEOUT, 1)


@settings(deadline=None)
@given(
    failure_class=st.sampled_from(RETRIED),
    attempt=st.integers(min_value=1, max_value=2000),
    jitter=st.floats(min_value=0.0, max_value=1.0),
    cap=st.floats(min_value=0.0, max_value=1e6),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_jitter_stays_within_its_bounds_and_under_the_cap(
    failure_class: FailureClass, attempt: int, jitter: float, cap: float, seed: int
) -> None:
    backoff = Backoff(jitter=jitter, cap_seconds=cap)
    unjittered = Backoff(jitter=0.0, cap_seconds=cap).delay(failure_class, attempt)
    delay = backoff.delay(failure_class, attempt, rng=_rng(seed))
    assert 0.0 <= delay <= cap
    assert unjittered * (1 - jitter) - 1e-9 <= delay <= unjittered * (1 + jitter) + 1e-9


def test_jitter_spreads_the_delays_of_jobs_that_failed_together() -> None:
    backoff = Backoff(jitter=0.2)
    rng = _rng(7)
    delays = {backoff.delay(FailureClass.TRANSIENT, 3, rng=rng) for _ in range(50)}
    assert len(delays) == 50
    assert min(delays) < 8.0 < max(delays)


def test_delays_at_the_cap_still_spread_below_it() -> None:
    backoff = Backoff(jitter=0.2, cap_seconds=100.0)
    rng = _rng(3)
    delays = [backoff.delay(FailureClass.RATE_LIMITED, 30, rng=rng) for _ in range(50)]
    assert max(delays) <= 100.0
    assert min(delays) < 95.0


def test_a_permanent_failure_has_no_retry_delay() -> None:
    with pytest.raises(ValueError, match="not retried"):
        Backoff().delay(FailureClass.PERMANENT, 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"jitter": -0.1},
        {"jitter": 1.5},
        {"cap_seconds": -1.0},
        {"cap_seconds": float("inf")},
        {"base_seconds": {FailureClass.TRANSIENT: -2.0}},
        {"base_seconds": {FailureClass.TRANSIENT: float("nan")}},
    ],
)
def test_an_unbounded_configuration_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="must be"):
        Backoff(**kwargs)  # type: ignore[arg-type]
