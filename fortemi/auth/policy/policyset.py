"""A complete, immutable set of policies in force, and the lookup every decision starts from.

Layers give precedence: the composite provider builds a set from ``[file policies,
database policies]``. A policy in a later layer is *overridden* (not in force, listed in
:attr:`PolicyInfo.overrides` of the winner) when an earlier layer has a policy for the same
resource type and name that applies in the later one's memory. Within what remains, a
policy for the resource's own memory beats one for every memory. So, for a project or
skill in memory ``m``: the file policy wins, else the database policy for ``m``, else the
database policy for every memory (shared skills).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence

from fortemi.auth.decision import Resource, ResourceType
from fortemi.auth.policy.model import (
    DefaultDecision,
    Defaults,
    Policy,
    PolicyError,
    PolicyInfo,
    PolicyRef,
    content_hash,
)

__all__ = ["PolicySet"]

_Key = tuple[ResourceType, str | None, str]  # (type, memory or None for all, name)
_NAMED = frozenset({ResourceType.PROJECT, ResourceType.SKILL, ResourceType.MEMORY})


class PolicySet:
    """The policies in force now; ``version`` hashes everything a decision can depend on.

    Immutable: providers swap whole sets, so a request evaluates every check against one
    consistent set even while a reload happens.
    """

    __slots__ = (
        "_by_key",
        "_errors",
        "_names",
        "_overrides",
        "_scoped",
        "defaults",
        "role_rank",
        "version",
    )

    def __init__(
        self,
        defaults: Defaults,
        layers: Sequence[Iterable[Policy]] = (),
        errors: Sequence[PolicyError] = (),
    ) -> None:
        self.defaults = defaults
        # role -> rank, lowest 0: what "required_role is a minimum" compares
        self.role_rank: Mapping[str, int] = {r: i for i, r in enumerate(defaults.role_order)}
        self._errors = tuple(errors)
        self._by_key: dict[_Key, Policy] = {}
        self._overrides: dict[_Key, list[PolicyRef]] = {}
        for layer in layers:
            winners = dict(self._by_key)  # only earlier layers can override this one
            seen: set[_Key] = set()
            for policy in layer:
                key = _key_of(policy)
                if key in seen:
                    raise ValueError(f"two policies for {key} in one layer")
                seen.add(key)
                winner = winners.get(key) or winners.get((key[0], None, key[2]))
                if winner is not None:
                    ref = PolicyRef(policy.source, policy.memory, policy.version)
                    self._overrides.setdefault(_key_of(winner), []).append(ref)
                    continue
                self._by_key[key] = policy
        # Names that have a policy, by (type, memory); memory None: every memory.
        self._scoped: dict[tuple[ResourceType, str | None], set[str]] = {}
        for type_, memory, name in self._by_key:
            self._scoped.setdefault((type_, memory), set()).add(name)
        self._names: dict[tuple[ResourceType, str], frozenset[str]] = {}
        self.version = content_hash(
            {
                "defaults": defaults.canonical(),
                "policies": sorted(
                    [t.value, m or "", n, p.source, p.version]
                    for (t, m, n), p in self._by_key.items()
                ),
            }
        )

    # -- what decisions read ---------------------------------------------------------------

    @property
    def default_decision(self) -> DefaultDecision:
        return self.defaults.decision

    @property
    def role_order(self) -> tuple[str, ...]:
        return self.defaults.role_order

    @property
    def errors(self) -> tuple[PolicyError, ...]:
        """Problems found when the sources were last read (the set may predate them)."""
        return self._errors

    def lookup(self, resource: Resource) -> Policy | None:
        """The policy governing ``resource``, or None (the default decision applies)."""
        type_ = resource.type
        if type_ is ResourceType.SYSTEM:
            return self.defaults.system
        if type_ is ResourceType.AUDIT:
            return self.defaults.audit
        name = resource.name
        if name is None:
            return None
        by_key = self._by_key
        if resource.memory is not None:
            policy = by_key.get((type_, resource.memory, name))
            if policy is not None:
                return policy
        return by_key.get((type_, None, name))

    def names(self, resource_type: ResourceType, memory: str) -> frozenset[str]:
        """Names of ``resource_type`` that have a policy applying in ``memory``."""
        cache_key = (resource_type, memory)
        names = self._names.get(cache_key)
        if names is None:
            names = frozenset(
                self._scoped.get((resource_type, None), set())
                | self._scoped.get((resource_type, memory), set())
            )
            self._names[cache_key] = names  # benign race: every writer stores the same value
        return names

    # -- what operators read ---------------------------------------------------------------

    def policies(self) -> Iterator[Policy]:
        """The resource policies in force (not the system and audit ones)."""
        return iter(self._by_key.values())

    def infos(self) -> list[PolicyInfo]:
        """Every policy in force, system and audit first, then by type, name and memory."""
        infos = [
            PolicyInfo(p.resource_type, None, None, p.source, p.version)
            for p in (self.defaults.system, self.defaults.audit)
            if p is not None
        ]
        for key in sorted(self._by_key, key=lambda k: (k[0].value, k[2], k[1] or "")):
            policy = self._by_key[key]
            overrides = tuple(self._overrides.get(key, ()))
            infos.append(
                PolicyInfo(key[0], key[2], key[1], policy.source, policy.version, overrides)
            )
        return infos

    def with_errors(self, errors: Sequence[PolicyError]) -> PolicySet:
        """This same set (same version) reporting ``errors``: a reload that was refused."""
        clone = copy.copy(self)
        clone._errors = tuple(errors)
        return clone

    def __repr__(self) -> str:
        return (
            f"PolicySet(version={self.version[:12]}, policies={len(self._by_key)}, "
            f"errors={len(self._errors)})"
        )


def _key_of(policy: Policy) -> _Key:
    if policy.resource_type not in _NAMED or policy.name is None:
        raise ValueError(f"{policy.resource_type} policies live in Defaults, not in layers")
    return (policy.resource_type, policy.memory, policy.name)
