"""A Fortemi deployment as its users meet it: settings read from the environment alone,
callers with tokens from an external issuer, the GraphQL API over a socket, the audit log
read by an auditor, ``/metrics`` scraped, and ``fortemi vault sync`` run as a command.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fortemi.platform.settings import Settings
from tests.support.oidc_double import OidcProviderDouble

__all__ = [
    "AUDIT",
    "Caller",
    "Deployment",
    "Recorded",
    "access_token",
    "keys",
    "run_cli",
    "settings_from_env",
]

FORTEMI = str(Path(sys.executable).parent / "fortemi")
# Everything a deployment's environment may configure Fortemi with.
_CONFIG_PREFIXES = ("FORTEMI_", "OIDC_", "OLLAMA_", "OPENAI_")
_CONFIG_NAMES = ("DATABASE_URL", "REDIS_URL")

AUDIT = """query($f: AuditFilter, $after: String) {
  auditLog(filter: $f, first: 100, after: $after) {
    edges { node { resourceType resourceName action decision reason clientRequestId details } }
    pageInfo { hasNextPage endCursor }
  }
}"""


def _configures(name: str) -> bool:
    return name.startswith(_CONFIG_PREFIXES) or name in _CONFIG_NAMES


def settings_from_env(env: Mapping[str, str]) -> Settings:
    """The settings ``fortemi serve`` would read from an environment holding only ``env``
    (no other FORTEMI_*, OIDC_*, ... variable of this process leaks in)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [name for name in os.environ if _configures(name)]:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        return Settings()


@dataclass(frozen=True)
class Caller:
    """What an identity provider asserts about a user."""

    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    permissions: tuple[str, ...] = ()


def access_token(idp: OidcProviderDouble, sub: str, caller: Caller) -> str:
    """An access token as the provider mints it: Authentik's ``groups`` claim, and the
    roles and permissions a property mapping adds under the default claim names."""
    claims = {"roles": list(caller.roles), "permissions": list(caller.permissions)}
    return idp.access_token(sub, groups=caller.groups, claims=claims, ttl=3600)


async def run_cli(url: str, token: str, *args: str) -> tuple[int, str]:
    """``fortemi ARGS`` as a user runs it against the server at ``url`` with ``token``;
    the exit status and its output (stdout, then stderr)."""
    env = {name: value for name, value in os.environ.items() if not _configures(name)}
    process = await asyncio.create_subprocess_exec(
        FORTEMI,
        *args,
        env={**env, "FORTEMI_URL": url, "FORTEMI_TOKEN": token},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


@dataclass(frozen=True)
class Recorded:
    """One audit row, as ``auditLog`` returns it."""

    resource_type: str
    resource_name: str | None
    decision: str
    reason: str
    details: dict[str, Any]

    @property
    def key(self) -> tuple[str, str | None, str, str]:
        return (self.resource_type, self.resource_name, self.decision, self.reason)


@dataclass
class Deployment:
    """A served app and its callers, by name (each with a token and a subject)."""

    url: str
    memory: str
    subs: dict[str, str]
    tokens: dict[str, str]
    auditor: str  # the caller who reads the audit log
    # Every response body each caller received, for leak checks.
    received: dict[str, list[str]] = field(default_factory=dict)

    async def post(
        self,
        who: str,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """One operation as ``who`` in the memory, over the socket; the JSON body. The
        request carries ``request_id`` (default: a fresh one) as its X-Request-Id."""
        headers = {
            "Authorization": f"Bearer {self.tokens[who]}",
            "X-Fortemi-Memory": self.memory,
            "X-Request-Id": request_id or uuid.uuid4().hex,
        }
        async with httpx.AsyncClient(base_url=self.url, timeout=120) as http:
            response = await http.post(
                "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
            )
        self.received.setdefault(who, []).append(response.text)
        body: dict[str, Any] = response.json()
        return body

    async def decisions(self, who: str, request_id: str) -> list[Recorded]:
        """The decisions recorded for one request of ``who`` (by its X-Request-Id), as
        the auditor reads them through ``auditLog``."""
        rows: list[Recorded] = []
        after: str | None = None
        while True:
            variables = {"f": {"userId": self.subs[who]}, "after": after}
            body = await self.post(self.auditor, AUDIT, variables)
            assert "errors" not in body, body
            page = body["data"]["auditLog"]
            rows += [
                Recorded(
                    n["resourceType"], n["resourceName"], n["decision"], n["reason"], n["details"]
                )
                for n in (edge["node"] for edge in page["edges"])
                if n["clientRequestId"] == request_id
            ]
            if not page["pageInfo"]["hasNextPage"]:
                return rows
            after = page["pageInfo"]["endCursor"]

    async def metric(self, name: str) -> float:
        """A metric's samples named ``name``, summed over their labels, from ``/metrics``."""
        async with httpx.AsyncClient(base_url=self.url) as http:
            response = await http.get("/metrics")
        assert response.status_code == 200, response.text
        return sum(
            sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
            if sample.name == name
        )


def keys(rows: Iterable[Recorded], resource_type: str) -> list[tuple[str, str | None, str, str]]:
    """The (type, name, decision, reason) of the rows about ``resource_type``."""
    return [row.key for row in rows if row.resource_type == resource_type]
