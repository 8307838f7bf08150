"""The access decision engine: a policy set, a principal, an action, a resource -> a decision.

The order is fixed and short-circuits at the first final answer::

    0. memory      a project or skill inside memory M, and M's policy does not let the
                   principal read M                  -> deny  memory_not_admitted
    1. lookup      no policy             -> the default (no_policy_default_deny / _allow)
    2. deny        subject or group      -> deny  explicit_deny       (deny always wins)
    3. grant       subject/group/role/permission -> allow explicit_grant
    4. action      not read, and not named in ``actions`` -> deny action_not_in_policy
    5. access      public / owner group / allowed group, else deny
    6. role        the action's required role (a minimum within the role order)
    7. permission  the action's required permission
    8. allow, with step 5's reason

Step 0 makes a memory a tenant boundary: a project's or skill's policy can narrow what a
principal may do inside a memory, never widen it past the memory's own read admission
(the two policies are intersected, not one replacing the other). The memory's admission
is its full ``read`` decision, so its deny lists, grants and default apply as well.

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
    check_action_stated,
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
# Resource types that live inside a memory and so pass its admission first (step 0).
_INSIDE_A_MEMORY = frozenset({ResourceType.PROJECT, ResourceType.SKILL})


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


# No name at all: a memory that does not admit the principal shows none of its contents.
_NOTHING = NameScope(frozenset(), listed_are_readable=True)


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
        if resource.type in _INSIDE_A_MEMORY and resource.memory is not None:
            entry = self._decide_own(
                policies, principal, Action.READ, Resource.of_memory(resource.memory)
            )
            if not entry.allowed:
                return Decision(
                    False,
                    Reason.MEMORY_NOT_ADMITTED,
                    action,
                    resource,
                    entry.policy_source,
                    policies.version,
                )
        return self._decide_own(policies, principal, action, resource)

    def decide_import(
        self, policies: PolicySet, principal: Principal, action: Action, resource: Resource
    ) -> Decision:
        """:meth:`decide` for an import into a memory (a vault sync): what the resource's
        own policy denies, the memory's admin may still do to the imported notes.

        Vault policies usually say who may *read* a project and nothing about writing, so
        once a sync has stored them, nobody could sync that project's files again. A
        memory's admin already governs everything in it (they may delete the memory), so
        importing into its projects and skills is theirs to do: ``read`` (comparing the
        stored note with the file), ``write`` and ``delete`` are then allowed with reason
        ``memory_admin_import``. It never opens more: an explicit deny still wins, a
        memory the principal may not enter stays closed, and only the import asks this
        way (search, notes and retrieve use :meth:`decide` and the read scope).
        """
        decision = self.decide(policies, principal, action, resource)
        if (
            decision.allowed
            or action is Action.ADMIN
            or resource.type not in _INSIDE_A_MEMORY
            or resource.memory is None
            or decision.reason in (Reason.EXPLICIT_DENY, Reason.MEMORY_NOT_ADMITTED)
        ):
            return decision
        admin = self.decide(policies, principal, Action.ADMIN, Resource.of_memory(resource.memory))
        if not admin.allowed:
            return decision
        return Decision(
            True,
            Reason.MEMORY_ADMIN_IMPORT,
            action,
            resource,
            admin.policy_source,
            policies.version,
        )

    def _decide_own(
        self, policies: PolicySet, principal: Principal, action: Action, resource: Resource
    ) -> Decision:
        """The decision of ``resource``'s own policy alone (steps 1 to 8)."""
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
        reason = check_action_stated(policy, action)
        if reason is not None:
            return False, reason
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
        if not own.allowed:
            # Step 0 of every decision inside the memory: nothing in it is readable.
            return ReadScope(
                memory=False,
                projects=_NOTHING,
                skills=_NOTHING,
                policy_version=policies.version,
            )
        return ReadScope(
            memory=True,
            projects=self._name_scope(policies, principal, ResourceType.PROJECT, memory),
            skills=self._name_scope(policies, principal, ResourceType.SKILL, memory),
            policy_version=policies.version,
        )

    def _name_scope(
        self, policies: PolicySet, principal: Principal, type_: ResourceType, memory: str
    ) -> NameScope:
        # Only called once the memory admits the principal, so each name's own policy
        # decides. Names without a policy get the default decision, so only names whose
        # answer differs from the default need listing: the readable ones under default
        # deny, the unreadable ones under default allow.
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
