"""Shared pieces of the policy tests: principals, and policy sets built from plain dicts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from fortemi.auth.decision import ResourceType
from fortemi.auth.policy import PolicySet, parse_defaults, parse_policy
from fortemi.auth.principal import Principal
from tests.support.policies import FIXTURE_POLICIES

__all__ = ["DEFAULT", "FIXTURE_POLICIES", "OPEN_MEMORIES", "build_set", "principal"]

# The fixture default.yaml, as a dict: the base most unit tests build on.
DEFAULT: dict[str, Any] = {
    "version": 1,
    "default": "deny",
    "roles": ["viewer", "editor", "admin"],
    "system": {
        "access_level": "public",
        "required_role": "admin",
        "actions": {"write": {}, "delete": {}, "admin": {}},
    },
    "audit": {
        "access_level": "private",
        "grant": {"roles": ["auditor"], "permissions": ["audit:read"]},
    },
}

FileDocs = Mapping[tuple[str, str], Mapping[str, Any]]
DatabaseDocs = Mapping[tuple[str, str | None, str], Mapping[str, Any]]

# File policies opening memories m1 and m2 to everyone for every action, for tests about
# what happens inside a memory: a project or skill is reachable only through its memory.
_OPEN_FOR_ALL: dict[str, Any] = {
    "access_level": "public",
    "actions": {"write": {}, "delete": {}, "admin": {}},
}
OPEN_MEMORIES: dict[tuple[str, str], Mapping[str, Any]] = {
    ("memory", "m1"): _OPEN_FOR_ALL,
    ("memory", "m2"): _OPEN_FOR_ALL,
}


def principal(
    sub: str = "someone",
    groups: Iterable[str] = (),
    roles: Iterable[str] = (),
    permissions: Iterable[str] = (),
) -> Principal:
    return Principal(
        sub=sub,
        groups=frozenset(groups),
        roles=frozenset(roles),
        permissions=frozenset(permissions),
        issuer="https://issuer.test",
        client_id="tests",
        token_id=None,
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )


def build_set(
    default: Mapping[str, Any] = DEFAULT,
    files: FileDocs | None = None,
    database: DatabaseDocs | None = None,
) -> PolicySet:
    """The set the composite provider would build from these documents: file policies
    (in every memory) first, then database ones. File documents get their identity key
    added, as a file under the right folder would have it."""
    defaults = parse_defaults(dict(default), source="file:default.yaml", file="default.yaml")
    file_policies = [
        parse_policy(
            {**doc, kind: name},
            resource_type=ResourceType(kind),
            name=name,
            memory=None,
            source=f"file:{kind}/{name}",
            file=f"{kind}/{name}",
        )
        for (kind, name), doc in (files or {}).items()
    ]
    stored = [
        parse_policy(
            dict(doc),
            resource_type=ResourceType(kind),
            name=name,
            memory=memory,
            source="database",
            file=f"database:{kind}/{memory}/{name}",
            require_identity=False,
        )
        for (kind, memory, name), doc in (database or {}).items()
    ]
    return PolicySet(defaults, [file_policies, stored])
