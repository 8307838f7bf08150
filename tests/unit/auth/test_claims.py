"""Claims to Principal: configured claim names, dotted paths, and the shapes values take."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from fortemi.auth.principal import Principal
from fortemi.auth.tokens import claim_values


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["admins", "authentik Admins"], {"admins", "authentik Admins"}),
        ("openid notes:read  notes:write", {"openid", "notes:read", "notes:write"}),
        ("a,b, c ,,d", {"a", "b", "c", "d"}),
        (["a", 1, None, {"b": 1}, ["c"], "", True], {"a"}),
        ("", set()),
        (42, set()),
        (4.2, set()),
        (True, set()),
        (None, set()),
        ({"admin": True}, set()),
    ],
)
def test_claim_values_accepts_lists_and_separated_strings_and_ignores_the_rest(
    value: Any, expected: set[str]
) -> None:
    assert claim_values({"groups": value}, "groups") == expected


def test_missing_claim_is_an_empty_set() -> None:
    assert claim_values({"sub": "x"}, "groups") == frozenset()


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"realm_access": {"roles": ["admin"]}}, {"admin"}),
        ({"realm_access": {"roles": "admin user"}}, {"admin", "user"}),
        ({"realm_access": {}}, set()),
        ({"realm_access": "admin"}, set()),
        ({"realm_access": ["roles"]}, set()),
        ({}, set()),
    ],
)
def test_dotted_claim_name_walks_nested_objects(claims: dict[str, Any], expected: set[str]) -> None:
    assert claim_values(claims, "realm_access.roles") == expected


def test_claim_literally_named_with_dots_wins_over_the_path() -> None:
    claims = {"https://fortemi.example/roles": ["editor"], "https://fortemi": {"example/roles": []}}

    assert claim_values(claims, "https://fortemi.example/roles") == {"editor"}


def _principal(**overrides: Any) -> Principal:
    fields: dict[str, Any] = {
        "sub": "alice",
        "groups": frozenset(),
        "roles": frozenset({"admin"}),
        "permissions": frozenset(),
        "issuer": "https://auth.example.com/",
        "client_id": None,
        "token_id": None,
        "expires_at": datetime(2030, 1, 1, tzinfo=UTC),
    }
    return Principal(**{**fields, **overrides})


def test_principal_has_role_checks_its_roles_only() -> None:
    principal = _principal(groups=frozenset({"editor"}))

    assert principal.has_role("admin")
    assert not principal.has_role("editor")


def test_principal_refuses_a_naive_expiry() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        _principal(expires_at=datetime(2030, 1, 1))
