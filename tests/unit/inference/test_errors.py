"""Backend failures become inference errors of the right job failure class, and a job
handler turns any of them into its outcome with ``outcome_for``."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from fortemi.inference import (
    InferenceRateLimited,
    InferenceRejected,
    InferenceTimeout,
    InferenceUnavailable,
    outcome_for,
)
from fortemi.inference._http import detail_of, error_for_status, error_for_transport, retry_after
from fortemi.platform.errors import FortemiError
from fortemi.platform.jobs.models import FailureClass


@pytest.mark.parametrize(
    ("status", "headers", "detail", "kind", "code"),
    [
        (429, {}, "slow down", InferenceRateLimited, "inference_rate_limited"),
        (503, {"retry-after": "3"}, "maintenance", InferenceRateLimited, "inference_rate_limited"),
        (503, {}, "server busy, please try again", InferenceRateLimited, "inference_rate_limited"),
        (503, {}, "upstream connect error", InferenceUnavailable, "inference_unavailable"),
        (500, {}, "llama runner crashed", InferenceUnavailable, "inference_unavailable"),
        (502, {}, "bad gateway", InferenceUnavailable, "inference_unavailable"),
        (504, {}, "gateway timeout", InferenceTimeout, "inference_timeout"),
        (408, {}, "request timeout", InferenceTimeout, "inference_timeout"),
        (404, {}, "model not found", InferenceRejected, "inference_model_not_found"),
        (400, {}, "bad input", InferenceRejected, "inference_bad_request"),
        (422, {}, "unprocessable", InferenceRejected, "inference_bad_request"),
        (401, {}, "no key", InferenceRejected, "inference_unauthorized"),
        (403, {}, "forbidden", InferenceRejected, "inference_unauthorized"),
        (413, {}, "too large", InferenceRejected, "inference_input_too_large"),
        (302, {}, "moved", InferenceUnavailable, "inference_bad_response"),
    ],
)
def test_each_status_maps_to_its_error_and_code(
    status: int, headers: dict[str, str], detail: str, kind: type, code: str
) -> None:
    error = error_for_status(status, detail, headers, backend="ollama", model="m")
    assert type(error) is kind
    assert (error.failure_code, error.status) == (code, status)
    assert isinstance(error, FortemiError)


def test_retry_after_travels_from_the_header_to_the_outcome() -> None:
    error = error_for_status(429, "", {"retry-after": "12"}, backend="openai", model=None)
    outcome = outcome_for(error)
    assert (outcome.kind, outcome.failure_class, outcome.failure_code) == (
        "retry",
        FailureClass.RATE_LIMITED,
        "inference_rate_limited",
    )
    assert outcome.retry_after_seconds == 12.0


@pytest.mark.parametrize(
    ("error", "kind", "failure_class"),
    [
        (InferenceRateLimited("x", backend="b"), "retry", FailureClass.RATE_LIMITED),
        (InferenceTimeout("x", backend="b"), "retry", FailureClass.TIMEOUT),
        (InferenceUnavailable("x", backend="b"), "retry", FailureClass.TRANSIENT),
        (InferenceRejected("x", backend="b"), "failure", FailureClass.PERMANENT),
    ],
)
def test_outcome_for_keeps_the_failure_class(
    error: InferenceRateLimited, kind: str, failure_class: FailureClass
) -> None:
    outcome = outcome_for(error)
    assert (outcome.kind, outcome.failure_class, outcome.failure_code) == (
        kind,
        failure_class,
        error.failure_code,
    )


@pytest.mark.parametrize(
    ("exc", "kind", "code"),
    [
        (httpx.ConnectError("refused"), InferenceUnavailable, "inference_unreachable"),
        (ConnectionError("refused"), InferenceUnavailable, "inference_unreachable"),
        (httpx.ConnectTimeout("slow connect"), InferenceUnavailable, "inference_unreachable"),
        (httpx.ReadTimeout("slow answer"), InferenceTimeout, "inference_timeout"),
        (httpx.PoolTimeout("pool"), InferenceTimeout, "inference_timeout"),
        (httpx.RemoteProtocolError("hung up"), InferenceUnavailable, "inference_unavailable"),
    ],
)
def test_transport_failures_are_transient_or_timeouts(
    exc: Exception, kind: type, code: str
) -> None:
    error = error_for_transport(exc, backend="ollama")
    assert (type(error), error.failure_code) == (kind, code)


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        (" 1.5 ", 1.5),
        ("-3", 0.0),
        ("Thu, 01 Jan 2026 12:00:30 GMT", 30.0),
        ("Thu, 01 Jan 2026 11:00:00 GMT", 0.0),
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
    ],
)
def test_retry_after_reads_seconds_and_http_dates(
    header: str | None, seconds: float | None
) -> None:
    assert retry_after(header, now=NOW) == seconds


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ('{"error": "model \\"x\\" not found"}', 'model "x" not found'),
        (
            '{"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}',
            "Incorrect API key",
        ),
        ("<html>bad gateway</html>", "<html>bad gateway</html>"),
        ("[1, 2]", "[1, 2]"),
    ],
)
def test_the_servers_message_is_read_from_either_apis_error_shape(body: str, detail: str) -> None:
    assert detail_of(body) == detail
