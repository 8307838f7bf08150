"""A bounded memory of tokens that already passed validation.

Verifying a signature costs more than the rest of a small GraphQL request; a client sends
the same token many times a minute. A token is remembered only after it passed every
check, for at most ``ttl`` seconds and never past its own ``exp``, so a cached answer is
one the validator would give again. Failed tokens are never remembered, so a flood of
bad tokens gets no cheaper and pushes nothing useful out.

Hand-written (a dozen lines over OrderedDict) because each entry expires at its own time,
which the usual TTL caches do not model.
"""

from __future__ import annotations

from collections import OrderedDict

from fortemi.auth.principal import Principal

__all__ = ["TokenCache"]


class TokenCache:
    def __init__(self, ttl: float, max_entries: int = 10_000) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self._ttl > 0

    def get(self, token: str, now: float) -> Principal | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        principal, until = entry
        if until <= now:
            del self._entries[token]
            return None
        self._entries.move_to_end(token)
        return principal

    def put(self, token: str, principal: Principal, now: float) -> None:
        if not self.enabled:
            return
        until = min(now + self._ttl, principal.expires_at.timestamp())
        if until <= now:
            return
        self._entries[token] = (principal, until)
        self._entries.move_to_end(token)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
