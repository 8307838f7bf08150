"""HTTP failures of remote backends, translated into inference errors in one place.

Both remote adapters speak HTTP through httpx (the ``ollama`` client is built on it), so
statuses and transport errors map the same way for both. Messages name the model, never
the server's address: they may reach API clients, and the address is the operator's.
"""

from __future__ import annotations

import email.utils
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime

import httpx

from fortemi.inference.errors import (
    InferenceError,
    InferenceRateLimited,
    InferenceRejected,
    InferenceTimeout,
    InferenceUnavailable,
)
from fortemi.platform.times import assume_utc

__all__ = ["bad_response", "detail_of", "error_for_status", "error_for_transport", "retry_after"]

_LABELS = {"ollama": "Ollama", "openai": "the OpenAI-compatible server"}
_DETAIL_LIMIT = 300


def _label(backend: str) -> str:
    return _LABELS.get(backend, backend)


def detail_of(body: str) -> str:
    """The message in an error body: Ollama's ``{"error": "..."}``, OpenAI's
    ``{"error": {"message": "..."}}``, else the text itself."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return error if isinstance(error, str) else body


def retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date, RFC 9110 §10.2.3).

    None when absent or unreadable; never negative.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        seconds = (assume_utc(when) - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def error_for_status(
    status: int, detail: str, headers: Mapping[str, str], *, backend: str, model: str | None
) -> InferenceError:
    """The error for an HTTP ``status`` answered by ``backend`` (``detail``: its message)."""
    who = _label(backend)
    detail = " ".join(detail.split())[:_DETAIL_LIMIT] or f"HTTP {status}"
    after = retry_after(headers.get("retry-after"))

    def make(kind: type[InferenceError], message: str, code: str | None = None) -> InferenceError:
        error = kind(
            message, backend=backend, failure_code=code, retry_after_seconds=after, status=status
        )
        error.model = model
        return error

    if status == 429 or (status == 503 and (after is not None or "busy" in detail.lower())):
        # Ollama answers 503 "server busy" when its request queue is full: a rate limit.
        return make(InferenceRateLimited, f"{who} is rate limiting requests: {detail}")
    if status in (408, 504):
        return make(InferenceTimeout, f"{who} timed out: {detail}")
    if status >= 500:
        return make(InferenceUnavailable, f"{who} failed ({status}): {detail}")
    if status in (401, 403):
        message = f"{who} refused the credentials ({status}): {detail}"
        return make(InferenceRejected, message, "inference_unauthorized")
    if status == 404:
        message = f"{who} has no model {model!r} or no such endpoint: {detail}"
        return make(InferenceRejected, message, "inference_model_not_found")
    if status == 413:
        message = f"{who} refused an input as too large: {detail}"
        return make(InferenceRejected, message, "inference_input_too_large")
    if 400 <= status < 500:
        message = f"{who} rejected the request ({status}): {detail}"
        return make(InferenceRejected, message, "inference_bad_request")
    return make(InferenceUnavailable, f"{who} answered HTTP {status}", "inference_bad_response")


def error_for_transport(exc: Exception, *, backend: str) -> InferenceError:
    """The error for a request that got no HTTP answer (``exc``: httpx's or the OS's)."""
    who = _label(backend)
    if isinstance(exc, httpx.ConnectTimeout):
        message = f"{who} could not be reached in time"
        return InferenceUnavailable(message, backend=backend, failure_code="inference_unreachable")
    if isinstance(exc, httpx.TimeoutException):
        return InferenceTimeout(f"{who} did not answer in time", backend=backend)
    if isinstance(exc, httpx.ConnectError | ConnectionError):
        return InferenceUnavailable(
            f"{who} refused or dropped the connection",
            backend=backend,
            failure_code="inference_unreachable",
        )
    return InferenceUnavailable(f"{who} request failed: {type(exc).__name__}", backend=backend)


def bad_response(backend: str, what: str) -> InferenceUnavailable:
    """A 2xx answer that is not what the API promises (a proxy's page, a truncated body)."""
    return InferenceUnavailable(
        f"{_label(backend)} sent a malformed answer: {what}",
        backend=backend,
        failure_code="inference_bad_response",
    )
