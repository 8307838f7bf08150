"""The error hierarchy every layer raises and the GraphQL layer renders.

::

    FortemiError                 (code)                   what the caller did or hit
    ├── Unauthenticated          UNAUTHENTICATED          no or invalid token
    ├── Forbidden                FORBIDDEN                known caller, not allowed
    ├── NotFound                 NOT_FOUND                no such thing in this memory
    ├── BadUserInput             BAD_USER_INPUT           malformed or out-of-bounds input
    ├── Conflict                 CONFLICT                 stale version, duplicate, wrong state
    ├── RateLimited              RATE_LIMITED             slow down
    └── Unavailable              SERVICE_UNAVAILABLE      a backing service is down

Anything else that escapes a resolver is a bug: it is logged with a request id and masked.
Foreign exceptions (asyncpg, jwt, httpx, redis) are translated into these at the boundary
module that calls the library, once, and re-raised ``from exc``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

__all__ = [
    "AuthFailure",
    "BadUserInput",
    "Conflict",
    "Forbidden",
    "FortemiError",
    "NotFound",
    "RateLimited",
    "Unauthenticated",
    "Unavailable",
]


class FortemiError(Exception):
    code: ClassVar[str] = "INTERNAL_SERVER_ERROR"

    def __init__(self, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extensions = extensions


# Why a token was refused, in words the caller may see (``extensions.reason``). Each names
# a check whose inputs the caller already has or could read (its own token, the issuer and
# audience in the discovery document, the public key set); key material, claim values and
# the provider's own failures stay in the log.
AuthFailure = Literal[
    "missing",
    "malformed",
    "expired",
    "not_yet_valid",
    "issuer_mismatch",
    "audience_mismatch",
    "invalid_signature",
    "unknown_key",
    "not_an_access_token",
]


class Unauthenticated(FortemiError):
    """The caller is not authenticated.

    ``message`` is what the caller sees (deliberately vague), with ``failure``, when given,
    as ``extensions.reason``; ``reason`` is the detail, logged only.
    """

    code = "UNAUTHENTICATED"

    def __init__(
        self,
        reason: str,
        message: str = "A valid bearer token is required",
        *,
        failure: AuthFailure | None = None,
    ) -> None:
        super().__init__(message, **({"reason": failure} if failure is not None else {}))
        self.reason = reason
        self.failure = failure


class Forbidden(FortemiError):
    code = "FORBIDDEN"


class NotFound(FortemiError):
    code = "NOT_FOUND"


class BadUserInput(FortemiError):
    code = "BAD_USER_INPUT"


class Conflict(FortemiError):
    code = "CONFLICT"


class RateLimited(FortemiError):
    code = "RATE_LIMITED"


class Unavailable(FortemiError):
    code = "SERVICE_UNAVAILABLE"
