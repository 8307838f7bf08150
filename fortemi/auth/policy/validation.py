"""The one validator of policy documents, for YAML files and database rows alike.

Strict by design: an unknown key, a wrong type or an out-of-range value anywhere is an
error, never ignored, because a typo (``acess_level``, ``deny: {group: ...}``) that was
silently skipped would silently change who may do what. Every problem in a document is
collected (not only the first), each as a :class:`PolicyError` naming the file, the line
(when the source has lines) and the field. A document with any error yields no policy.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from enum import StrEnum
from typing import Any, TypeVar

from fortemi.auth.decision import Action, ResourceType
from fortemi.auth.policy.model import (
    DEFAULT_ROLES,
    AccessLevel,
    ActionOverride,
    DefaultDecision,
    Defaults,
    Policy,
    PolicyError,
)
from fortemi.platform.database import MEMORY_NAME, is_memory_name

__all__ = [
    "MAX_NAME_CHARS",
    "LineMap",
    "PolicyValidationError",
    "check_resource_name",
    "field_name",
    "parse_defaults",
    "parse_policy",
]

MAX_NAME_CHARS = 200
SKILL_PREFIX = "SKILL-"
FORMAT_VERSION = 1

Path_ = tuple[str | int, ...]  # ("deny", "groups", 2) -> "deny.groups[2]"
LineMap = Mapping[Path_, int]  # a field's path -> its 1-based line in the source

_RULE_KEYS = frozenset(
    {"owner_group", "access_level", "allowed_groups", "required_role", "required_permission"}
    | {"actions", "deny", "grant"}
)
_IDENTITY_KEYS = ("project", "skill", "memory")
_RESOURCE_KEYS = _RULE_KEYS | {"version", *_IDENTITY_KEYS}
_DEFAULT_KEYS = frozenset({"version", "default", "roles", "system", "audit"})
_ACTION_KEYS = frozenset({"required_role", "required_permission"})
_DENY_KEYS = frozenset({"groups", "subjects"})
_GRANT_KEYS = frozenset({"groups", "subjects", "roles", "permissions"})

_E = TypeVar("_E", bound=StrEnum)


class PolicyValidationError(Exception):
    """A document is invalid; ``errors`` says every way in which."""

    def __init__(self, errors: list[PolicyError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


def check_resource_name(resource_type: ResourceType, name: object) -> str | None:
    """Why ``name`` cannot name a ``resource_type``, or None if it can."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        return f"a {resource_type.value} name is 1 to {MAX_NAME_CHARS} characters"
    if name != name.strip():
        return f"a {resource_type.value} name has no surrounding whitespace (got {name!r})"
    if resource_type is ResourceType.SKILL and (
        not name.startswith(SKILL_PREFIX) or name == SKILL_PREFIX
    ):
        return (
            f"skill names start with {SKILL_PREFIX} and go on, e.g. SKILL-kubernetes (got {name!r})"
        )
    if resource_type is ResourceType.MEMORY and not is_memory_name(name):
        return f"memory names match ^{MEMORY_NAME.pattern}$ (got {name!r})"
    return None


def parse_policy(
    document: object,
    *,
    resource_type: ResourceType,
    name: str,
    memory: str | None,
    source: str,
    file: str,
    lines: LineMap | None = None,
    name_origin: str = "folder name",
    require_identity: bool = True,
) -> Policy:
    """The policy for ``(resource_type, memory, name)`` that ``document`` describes.

    The document's ``project``/``skill``/``memory`` key must name this very resource
    (``name_origin`` says where the expected name came from, for the message); it is
    required when ``require_identity`` (files) and optional otherwise (database rows,
    whose columns already say it). Raises :class:`PolicyValidationError`.
    """
    v = _Validator(file, lines)
    doc = v.mapping(document, (), _RESOURCE_KEYS)
    problem = check_resource_name(resource_type, name)
    if problem is not None:
        v.fail((resource_type.value,) if resource_type.value in doc else (), problem)
    v.format_version(doc)
    expected = resource_type.value
    named = [key for key in _IDENTITY_KEYS if key in doc]
    if not named and require_identity:
        v.fail((expected,), f"missing; every policy names its resource ({expected}: {name})")
    for key in named:
        if key != expected:
            v.fail((key,), f"this is a {expected} policy, so it says {expected}: {name}")
        elif doc[key] != name:
            v.fail((key,), f"must match the {name_origin} {name!r} (got {_shown(doc[key])})")
    policy = v.rules(doc, (), resource_type, name, memory, source)
    v.raise_if_failed()
    return policy


def parse_defaults(
    document: object, *, source: str, file: str, lines: LineMap | None = None
) -> Defaults:
    """What a ``default.yaml`` document says. Raises :class:`PolicyValidationError`."""
    v = _Validator(file, lines)
    doc = v.mapping(document, (), _DEFAULT_KEYS)
    v.format_version(doc)
    decision = v.choice(doc.get("default", "deny"), ("default",), DefaultDecision)
    roles: tuple[str, ...] = DEFAULT_ROLES
    if "roles" in doc:
        raw = doc["roles"]
        if not isinstance(raw, list):
            v.fail(("roles",), f"must be a list of roles, lowest first (got {_shown(raw)})")
        else:
            roles = tuple(v.string(item, ("roles", i)) or "" for i, item in enumerate(raw))
            for i, role in enumerate(roles):
                if role and role in roles[:i]:
                    v.fail(("roles", i), f"{role!r} appears twice; the order must be strict")
    sections: dict[str, Policy | None] = {}
    for key, type_ in (("system", ResourceType.SYSTEM), ("audit", ResourceType.AUDIT)):
        if key not in doc:
            v.fail((key,), f"missing; default.yaml must say who may use the {key} resource")
            sections[key] = None
            continue
        section = v.mapping(doc[key], (key,), _RULE_KEYS)
        sections[key] = v.rules(section, (key,), type_, None, None, source)
    v.raise_if_failed()
    return Defaults(decision, roles, sections["system"], sections["audit"], source)


class _Validator:
    """Checks values at paths, collecting errors located by ``lines``."""

    def __init__(self, file: str, lines: LineMap | None) -> None:
        self.file = file
        self.lines = lines or {}
        self.errors: list[PolicyError] = []

    def fail(self, path: Path_, message: str) -> None:
        line = None
        for end in range(len(path), -1, -1):  # the field's own line, else its parent's
            line = self.lines.get(path[:end])
            if line is not None:
                break
        self.errors.append(PolicyError(self.file, line, field_name(path), message))

    def raise_if_failed(self) -> None:
        if self.errors:
            # In the order a reader meets them in the file (stable for equal lines).
            raise PolicyValidationError(sorted(self.errors, key=lambda e: e.line or 0))

    def mapping(self, value: object, path: Path_, allowed: Collection[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping of keys to values (got {_shown(value)})")
            return {}
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys are strings (got {_shown(key)})")
            elif key not in allowed:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self.fail((*path, key), f"unknown key; {hint}allowed: {', '.join(sorted(allowed))}")
        return {k: v for k, v in value.items() if isinstance(k, str) and k in allowed}

    def format_version(self, doc: dict[str, Any]) -> None:
        version = doc.get("version", FORMAT_VERSION)
        if isinstance(version, bool) or not isinstance(version, int):
            self.fail(("version",), f"must be the integer {FORMAT_VERSION} (got {_shown(version)})")
        elif version != FORMAT_VERSION:
            self.fail(("version",), f"unsupported format version {version}; only 1 exists")

    def string(self, value: object, path: Path_) -> str | None:
        if not isinstance(value, str):
            self.fail(path, f"must be a string (got {_shown(value)})")
            return None
        if not value or len(value) > MAX_NAME_CHARS:
            self.fail(path, f"must be 1 to {MAX_NAME_CHARS} characters (got {len(value)})")
        elif value != value.strip():
            self.fail(path, f"must not start or end with whitespace (got {value!r})")
        return value

    def optional_string(self, value: object, path: Path_) -> str | None:
        return None if value is None else self.string(value, path)

    def strings(self, value: object, path: Path_) -> frozenset[str]:
        if not isinstance(value, list):
            self.fail(path, f"must be a list of strings, [] for none (got {_shown(value)})")
            return frozenset()
        return frozenset(s for i, item in enumerate(value) if (s := self.string(item, (*path, i))))

    def choice(self, value: object, path: Path_, enum: type[_E]) -> _E:
        choices = [member.value for member in enum]
        if isinstance(value, str) and value in choices:
            return enum(value)
        self.fail(path, f"must be one of {', '.join(choices)} (got {_shown(value)})")
        return next(iter(enum))

    def rules(
        self,
        doc: dict[str, Any],
        at: Path_,
        resource_type: ResourceType,
        name: str | None,
        memory: str | None,
        source: str,
    ) -> Policy:
        """The fields every policy shares (resource documents and default.yaml sections)."""
        if "access_level" in doc:
            level = self.choice(doc["access_level"], (*at, "access_level"), AccessLevel)
        else:
            choices = ", ".join(member.value for member in AccessLevel)
            self.fail((*at, "access_level"), f"missing; must be one of {choices}")
            level = AccessLevel.PRIVATE
        deny = self.mapping(doc.get("deny", {}), (*at, "deny"), _DENY_KEYS)
        grant = self.mapping(doc.get("grant", {}), (*at, "grant"), _GRANT_KEYS)
        return Policy(
            resource_type=resource_type,
            name=name,
            memory=memory,
            source=source,
            owner_group=self.optional_string(doc.get("owner_group"), (*at, "owner_group")),
            access_level=level,
            allowed_groups=self.strings(doc.get("allowed_groups", []), (*at, "allowed_groups")),
            required_role=self.optional_string(doc.get("required_role"), (*at, "required_role")),
            required_permission=self.optional_string(
                doc.get("required_permission"), (*at, "required_permission")
            ),
            actions=self.actions(doc.get("actions", {}), (*at, "actions")),
            deny_groups=self.strings(deny.get("groups", []), (*at, "deny", "groups")),
            deny_subjects=self.strings(deny.get("subjects", []), (*at, "deny", "subjects")),
            grant_groups=self.strings(grant.get("groups", []), (*at, "grant", "groups")),
            grant_subjects=self.strings(grant.get("subjects", []), (*at, "grant", "subjects")),
            grant_roles=self.strings(grant.get("roles", []), (*at, "grant", "roles")),
            grant_permissions=self.strings(
                grant.get("permissions", []), (*at, "grant", "permissions")
            ),
        )

    def actions(self, value: object, path: Path_) -> dict[Action, ActionOverride]:
        raw = self.mapping(value, path, [action.value for action in Action])
        overrides: dict[Action, ActionOverride] = {}
        for key, body in raw.items():
            fields = self.mapping(body, (*path, key), _ACTION_KEYS)
            role_path = (*path, key, "required_role")
            permission_path = (*path, key, "required_permission")
            overrides[Action(key)] = ActionOverride(
                required_role=self.optional_string(fields.get("required_role"), role_path),
                required_permission=self.optional_string(
                    fields.get("required_permission"), permission_path
                ),
                sets_role="required_role" in fields,
                sets_permission="required_permission" in fields,
            )
        return overrides


def field_name(path: Path_) -> str | None:
    """A path as messages show it: ("deny", "groups", 2) -> "deny.groups[2]"."""
    if not path:
        return None
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _shown(value: object) -> str:
    """A value as an error message quotes it: scalars as written, containers by kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"
