"""Access policies: YAML and database documents in, allow/deny decisions out.

The pieces, in the order a request meets them::

    PolicyProvider.snapshot()  ->  PolicySet  ->  AccessDecisionEngine.decide()  ->  Decision
    (files + database, kept          (immutable,     (memory admission, deny, grant,
     current through Redis)           versioned)      stated action, access level,
                                                      role, permission)

Lists and searches ask :meth:`AccessDecisionEngine.read_scope` instead, once per request,
and turn the :class:`ReadScope` into a SQL predicate.
"""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis

from fortemi.auth.policy.cache import GENERATION_KEY, RedisCachedPolicyProvider
from fortemi.auth.policy.database_provider import DatabasePolicyProvider, StoredPolicy
from fortemi.auth.policy.engine import AccessDecisionEngine, NameScope, ReadScope
from fortemi.auth.policy.loader import load_policy_directory, read_yaml
from fortemi.auth.policy.model import (
    DEFAULT_ROLES,
    AccessLevel,
    ActionOverride,
    DefaultDecision,
    Defaults,
    Policy,
    PolicyError,
    PolicyInfo,
    PolicyRef,
)
from fortemi.auth.policy.policyset import PolicySet
from fortemi.auth.policy.providers import (
    CompositePolicyProvider,
    FilePolicyProvider,
    PolicyProvider,
)
from fortemi.auth.policy.validation import PolicyValidationError, parse_defaults, parse_policy
from fortemi.platform.database import Database

__all__ = [
    "DEFAULT_ROLES",
    "GENERATION_KEY",
    "AccessDecisionEngine",
    "AccessLevel",
    "ActionOverride",
    "CompositePolicyProvider",
    "DatabasePolicyProvider",
    "DefaultDecision",
    "Defaults",
    "FilePolicyProvider",
    "NameScope",
    "Policy",
    "PolicyError",
    "PolicyInfo",
    "PolicyProvider",
    "PolicyRef",
    "PolicySet",
    "PolicyValidationError",
    "ReadScope",
    "RedisCachedPolicyProvider",
    "StoredPolicy",
    "build_policy_provider",
    "load_policy_directory",
    "parse_defaults",
    "parse_policy",
    "read_yaml",
]


def build_policy_provider(directory: Path, db: Database, redis: Redis) -> RedisCachedPolicyProvider:
    """The production wiring: files and database merged, kept current through Redis.

    The caller runs ``provider.inner.file.watch()`` as a task for hot reload, writes
    through ``provider.inner.database``, and calls ``provider.invalidate()`` after writes.
    """
    composite = CompositePolicyProvider(FilePolicyProvider(directory), DatabasePolicyProvider(db))
    return RedisCachedPolicyProvider(composite, redis)
