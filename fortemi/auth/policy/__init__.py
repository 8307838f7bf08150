"""Access policies: YAML and database documents in, allow/deny decisions out.

The pieces, in the order a request meets them::

    PolicyService.snapshot()  ->  PolicySet  ->  AccessDecisionEngine.decide()  ->  Decision
    (files + database, kept          (immutable,     (memory admission, deny, grant,
     current through Redis)           versioned)      stated action, access level,
                                                      role, permission)

:class:`PolicyService` is what the rest of the code holds: reads, and writes that
announce themselves to every replica; :func:`build_policy_service` is its one wiring.
Lists and searches ask :meth:`AccessDecisionEngine.read_scope` instead, once per request,
and turn the :class:`ReadScope` into a SQL predicate.
"""

from __future__ import annotations

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
from fortemi.auth.policy.service import MemoryPolicies, PolicyService, build_policy_service
from fortemi.auth.policy.validation import PolicyValidationError, parse_defaults, parse_policy

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
    "MemoryPolicies",
    "NameScope",
    "Policy",
    "PolicyError",
    "PolicyInfo",
    "PolicyProvider",
    "PolicyRef",
    "PolicyService",
    "PolicySet",
    "PolicyValidationError",
    "ReadScope",
    "RedisCachedPolicyProvider",
    "StoredPolicy",
    "build_policy_service",
    "load_policy_directory",
    "parse_defaults",
    "parse_policy",
    "read_yaml",
]
