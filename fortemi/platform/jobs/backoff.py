"""Retry delays: exponential per failure class, jittered, capped.

Each class has its own base because each failure has its own cure: a rate limit lifts
after tens of seconds, a flaky connection after a couple, a stale worker (its lease
expired) needs no wait beyond letting another worker pick the job up. Jitter spreads the
jobs that failed together (one outage) so they do not all come back at the same instant.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fortemi.platform.jobs.models import FailureClass

__all__ = ["DEFAULT_BASE_SECONDS", "Backoff"]

DEFAULT_BASE_SECONDS: Mapping[FailureClass, float] = MappingProxyType(
    {
        FailureClass.TRANSIENT: 2.0,
        FailureClass.RATE_LIMITED: 30.0,
        FailureClass.TIMEOUT: 10.0,
        FailureClass.STALE_WORKER: 1.0,
    }
)

# 2.0 ** 1023 is the largest power of two a float holds; past it the delay is the cap anyway.
_MAX_EXPONENT = 1023
# Shared by every Backoff not given an rng; jitter needs spread, not secrecy.
_RNG = random.Random()  # noqa: S311


def _default_base() -> Mapping[FailureClass, float]:
    return DEFAULT_BASE_SECONDS


@dataclass(frozen=True)
class Backoff:
    """How long a job waits before its next attempt after a failure of a given class.

    ``delay(c, n)`` for the n-th attempt (n >= 1; smaller counts as 1) is
    ``base_seconds[c] * 2 ** (n - 1)``, capped at ``cap_seconds``, then multiplied by a
    uniform factor in ``[1 - jitter, 1 + jitter]`` and clamped to ``[0, cap_seconds]``.
    A class without a base (``PERMANENT``) is never retried: ValueError.
    """

    base_seconds: Mapping[FailureClass, float] = field(default_factory=_default_base)
    cap_seconds: float = 3600.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be within 0..1, not {self.jitter}")
        if not 0.0 <= self.cap_seconds < math.inf:
            raise ValueError(f"cap_seconds must be finite and non-negative: {self.cap_seconds}")
        for failure_class, base in self.base_seconds.items():
            if not 0.0 <= base < math.inf:
                raise ValueError(f"base for {failure_class} must be finite and non-negative")

    def delay(
        self, failure_class: FailureClass, attempt: int, *, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before retrying after attempt number ``attempt`` failed."""
        try:
            base = self.base_seconds[failure_class]
        except KeyError:
            raise ValueError(f"failures of class {failure_class} are not retried") from None
        exponent = min(max(attempt, 1) - 1, _MAX_EXPONENT)
        # min() before jitter: at the cap the delays still spread (below it), rather than
        # all landing on the cap together.
        raw = min(base * 2.0**exponent, self.cap_seconds)
        factor = 1.0 + (rng or _RNG).uniform(-self.jitter, self.jitter)
        return min(max(raw * factor, 0.0), self.cap_seconds)
