"""What an inference backend raises, and how a job turns it into an outcome.

::

    InferenceError (FortemiError)  failure class  code                 typical cause
    ├── InferenceRateLimited       rate_limited   RATE_LIMITED         429; Ollama's 503 "busy"
    ├── InferenceTimeout           timeout        SERVICE_UNAVAILABLE  no answer in time; 408, 504
    ├── InferenceUnavailable       transient      SERVICE_UNAVAILABLE  connection refused, 5xx,
    │                                                                  a malformed answer
    └── InferenceRejected          permanent      INFERENCE_REJECTED   4xx: unknown model, bad
                                                                       request or key; asking
                                                                       the local backend to
                                                                       generate

Each adapter translates its library's exceptions and HTTP statuses into these, once, at
its boundary (:mod:`fortemi.inference._http`), so callers never see httpx or ollama types.
A job handler maps any of them to its outcome in one line::

    except InferenceError as exc:
        return outcome_for(exc)
"""

from __future__ import annotations

from typing import Any, ClassVar

from fortemi.platform.errors import FortemiError
from fortemi.platform.jobs.models import FailureClass, JobOutcome

__all__ = [
    "InferenceError",
    "InferenceRateLimited",
    "InferenceRejected",
    "InferenceTimeout",
    "InferenceUnavailable",
    "outcome_for",
]


class InferenceError(FortemiError):
    """A backend call that did not produce a result.

    ``failure_code`` is a stable snake_case name for job records and logs;
    ``retry_after_seconds`` is the server's own hint (``Retry-After``), when it gave one.
    """

    code = "SERVICE_UNAVAILABLE"
    failure_class: ClassVar[FailureClass] = FailureClass.TRANSIENT
    default_failure_code: ClassVar[str] = "inference_failed"
    # The model the failed request named, when the backend knows it (for metrics and logs;
    # not an extension: clients see the message, which names it where it matters).
    model: str | None = None

    def __init__(
        self,
        message: str,
        *,
        backend: str,
        failure_code: str | None = None,
        retry_after_seconds: float | None = None,
        status: int | None = None,
        **extensions: Any,
    ) -> None:
        if retry_after_seconds is not None:
            extensions["retryAfterSeconds"] = retry_after_seconds
        super().__init__(message, backend=backend, **extensions)
        self.backend = backend
        self.failure_code = failure_code or self.default_failure_code
        self.retry_after_seconds = retry_after_seconds
        self.status = status


class InferenceRateLimited(InferenceError):
    code = "RATE_LIMITED"
    failure_class = FailureClass.RATE_LIMITED
    default_failure_code = "inference_rate_limited"


class InferenceTimeout(InferenceError):
    failure_class = FailureClass.TIMEOUT
    default_failure_code = "inference_timeout"


class InferenceUnavailable(InferenceError):
    failure_class = FailureClass.TRANSIENT
    default_failure_code = "inference_unavailable"


class InferenceRejected(InferenceError):
    """The backend will refuse this request however often it is sent."""

    code = "INFERENCE_REJECTED"
    failure_class = FailureClass.PERMANENT
    default_failure_code = "inference_rejected"


def outcome_for(error: InferenceError) -> JobOutcome:
    """The job outcome for ``error``: a permanent failure, or a retry of its class.

    The server's ``Retry-After``, when given, replaces the computed backoff.
    """
    if error.failure_class is FailureClass.PERMANENT:
        return JobOutcome.failure(error.failure_code)
    return JobOutcome.retry(
        error.failure_class, error.failure_code, after_seconds=error.retry_after_seconds
    )
