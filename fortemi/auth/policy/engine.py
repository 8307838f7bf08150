"""The access decision engine: a policy set, a principal, an action, a resource -> a decision.

The order is fixed and short-circuits at the first final answer::

    1. lookup      no policy             -> the default (no_policy_default_deny / _allow)
    2. deny        subject or group      -> deny  explicit_deny       (deny always wins)
    3. grant       subject/group/role/permission -> allow explicit_grant
    4. access      public / owner group / allowed group, else deny
    5. role        the action's required role (a minimum within the role order)
    6. permission  the action's required permission
    7. allow, with step 4's reason

Lists and searches never post-filter: :meth:`AccessDecisionEngine.read_scope` turns "what
may this principal read in this memory" into a :class:`ReadScope` the repository renders
as a SQL predicate before ranking. A read scope agrees with :meth:`decide` for ``read`` on
every name, including names without a policy (the default decision covers those).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from fortemi.auth.decision import Action, Decision, Reason, Resource, ResourceType
from fortemi.auth.policy.checkers import (
    check_access_level,
    check_deny,
    check_grant,
    check_permission,
    check_role,
)
from fortemi.auth.policy.model import DefaultDecision, Policy
from fortemi.auth.policy.policyset import PolicySet
from fortemi.auth.principal import Principal

__all__ = ["AccessDecisionEngine", "NameScope", "ReadScope"]

_ScopeKey = tuple[str, str, frozenset[str], frozenset[str], frozenset[str], str]


@dataclass(frozen=True, slots=True)
class NameScope:
    """Which names of one resource type are readable, as a finite exception list.

    ``listed_are_readable`` True: only ``names`` are readable (the default denies the
    rest). False: every name except ``names`` is readable (the default allows).
    """

    names: frozenset[str]
    listed_are_readable: bool

    def allows(self, name: str) -> bool:
        return (name in self.names) == self.listed_are_readable


@dataclass(frozen=True, slots=True)
class ReadScope:
    """What a principal may read in one memory, under one policy set version."""

    memory: bool  # notes with neither project nor skill (the memory's own policy)
    projects: NameScope
    skills: NameScope
    policy_version: str = ""

    def allows_note(self, project: str | None, skill: str | None) -> bool:
        """The same rule as :meth:`Resource.of_note`: skill, else project, else memory."""
        if skill is not None:
            return self.skills.allows(skill)
        if project is not None:
            return self.projects.allows(project)
        return self.memory


class AccessDecisionEngine:
    """Stateless apart from a bounded LRU of read scopes; safe to share across requests
    and threads.

    A read scope is keyed by (policy set version, sub, groups, roles, permissions,
    memory): everything it depends on, so a cached scope is never stale, and a new
    policy version simply misses.
    """

    def __init__(self, *, read_scope_cache_size: int = 4096) -> None:
        if read_scope_cache_size < 1:
            raise ValueError("read_scope_cache_size must be at least 1")
        self._scopes: OrderedDict[_ScopeKey, ReadScope] = OrderedDict()
        self._scope_cache_size = read_scope_cache_size
        self._lock = threading.Lock()  # worker threads may share the engine

    def decide(
        self, policies: PolicySet, principal: Principal, action: Action, resource: Resource
    ) -> Decision:
        """The decision for ``principal`` doing ``action`` on ``resource`` under ``policies``."""
        policy = policies.lookup(resource)
        if policy is None:
            allowed = policies.default_decision is DefaultDecision.ALLOW
            reason = Reason.NO_POLICY_DEFAULT_ALLOW if allowed else Reason.NO_POLICY_DEFAULT_DENY
            return Decision(allowed, reason, action, resource, None, policies.version)
        allowed, reason = self._evaluate(policies, policy, principal, action)
        return Decision(allowed, reason, action, resource, policy.source, policies.version)

    @staticmethod
    def _evaluate(
        policies: PolicySet, policy: Policy, principal: Principal, action: Action
    ) -> tuple[bool, Reason]:
        reason = check_deny(policy, principal)
        if reason is not None:
            return False, reason
        reason = check_grant(policy, principal)
        if reason is not None:
            return True, reason
        admitted, access = check_access_level(policy, principal)
        if not admitted:
            return False, access
        reason = check_role(policy, principal, action, policies.role_rank)
        if reason is None:
            reason = check_permission(policy, principal, action)
        if reason is not None:
            return False, reason
        return True, access

    def read_scope(self, policies: PolicySet, principal: Principal, memory: str) -> ReadScope:
        """What ``principal`` may read in ``memory``; cached, so once per request is cheap."""
        key: _ScopeKey = (
            policies.version,
            principal.sub,
            principal.groups,
            principal.roles,
            principal.permissions,
            memory,
        )
        with self._lock:
            scope = self._scopes.get(key)
            if scope is not None:
                self._scopes.move_to_end(key)
                return scope
        scope = self.compute_read_scope(policies, principal, memory)
        with self._lock:
            self._scopes[key] = scope
            if len(self._scopes) > self._scope_cache_size:
                self._scopes.popitem(last=False)
        return scope

    def compute_read_scope(
        self, policies: PolicySet, principal: Principal, memory: str
    ) -> ReadScope:
        """:meth:`read_scope` without the cache: one evaluation per name with a policy."""
        own = self.decide(policies, principal, Action.READ, Resource.of_memory(memory))
        return ReadScope(
            memory=own.allowed,
            projects=self._name_scope(policies, principal, ResourceType.PROJECT, memory),
            skills=self._name_scope(policies, principal, ResourceType.SKILL, memory),
            policy_version=policies.version,
        )

    def _name_scope(
        self, policies: PolicySet, principal: Principal, type_: ResourceType, memory: str
    ) -> NameScope:
        # Names without a policy get the default decision, so only names whose answer
        # differs from the default need listing: the readable ones under default deny,
        # the unreadable ones under default allow.
        default_allows = policies.default_decision is DefaultDecision.ALLOW
        exceptions: list[str] = []
        for name in policies.names(type_, memory):
            policy = policies.lookup(Resource(type_, name, memory))
            if policy is None:  # cannot happen: names() lists only names with a policy
                continue
            allowed, _ = self._evaluate(policies, policy, principal, Action.READ)
            if allowed is not default_allows:
                exceptions.append(name)
        return NameScope(frozenset(exceptions), listed_are_readable=not default_allows)

    def clear_cache(self) -> None:
        with self._lock:
            self._scopes.clear()
