"""Someone with write access to the database, but not the audit key, tampers with the log of
a real server; ``auditVerify`` and ``fortemi audit verify`` both notice. And the trace id
of a recorded decision is the server's, whatever X-Request-Id the client sent."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from blake3 import blake3

from fortemi.app import create_app
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime
from tests.integration.audit.helpers import execute

VERIFY = "{ auditVerify { ok checked firstBrokenId problem } }"
LOG = """query($f: AuditFilter) { auditLog(filter: $f, first: 50) {
  edges { node { id decision traceId clientRequestId } } } }"""


@asynccontextmanager
async def serving(settings: Settings, dsn: str, redis: str) -> AsyncIterator[Client]:
    """A server process's runtime on the test's own database, and a client of its API."""
    runtime = await Runtime.open(settings, ServiceUrls(database=dsn, redis=redis))
    try:
        transport = httpx.ASGITransport(app=create_app(runtime))
        async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as c:
            yield Client(runtime, c)
    finally:
        await runtime.close()


class Client:
    def __init__(self, runtime: Runtime, http: httpx.AsyncClient) -> None:
        self.runtime = runtime
        self.http = http
        assert runtime.issuer is not None
        self.auditor = runtime.issuer.mint("ivy-auditor", roles=["auditor"])
        self.outsider = runtime.issuer.mint("olga-outsider", roles=["viewer"])

    async def gql(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str, **headers: str
    ) -> dict[str, Any]:
        response = await self.http.post(
            "/graphql",
            json={"query": query, "variables": variables or {}},
            headers={"Authorization": f"Bearer {token}", **headers},
        )
        body: dict[str, Any] = response.json()
        return body

    async def verify(self) -> dict[str, Any]:
        body = await self.gql(VERIFY, token=self.auditor)
        assert "errors" not in body, body
        result: dict[str, Any] = body["data"]["auditVerify"]
        return result


@pytest.fixture
async def two_segments(
    settings: Settings, fresh_dsn: str, service_urls: ServiceUrls
) -> tuple[str, str]:
    """Two server runs, one after the other, each recording allows and denies."""
    names = []
    for _ in range(2):
        async with serving(settings, fresh_dsn, service_urls.redis) as client:
            await client.gql(VERIFY, token=client.outsider)  # a deny
            assert (await client.verify())["ok"] is True
            names.append(client.runtime.audit.segment)
    return names[0], names[1]


async def _cli(settings: Settings, dsn: str, redis: str, *args: str) -> tuple[int, str, str]:
    """``fortemi audit ARGS`` as an operator runs it: (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    # The server's data directory, so the command holds the key the server chained with.
    env.update(FORTEMI_HOME=str(settings.home), DATABASE_URL=dsn, REDIS_URL=redis)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fortemi", "audit", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _cli_verify(settings: Settings, dsn: str, redis: str) -> tuple[int, str]:
    code, out, err = await _cli(settings, dsn, redis, "verify")
    return code, out + err


async def test_deleting_an_older_segment_with_its_head_fails_api_and_cli_verification(
    settings: Settings,
    fresh_dsn: str,
    service_urls: ServiceUrls,
    audit_db: Database,
    two_segments: tuple[str, str],
) -> None:
    older, newer = two_segments
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = $1", older)
    await execute(audit_db, "DELETE FROM rbac_audit_segment WHERE segment = $1", older)
    first_of_newer = await audit_db.fetchval(
        "SELECT id FROM rbac_audit_log WHERE segment = $1 ORDER BY seq LIMIT 1", newer
    )
    async with serving(settings, fresh_dsn, service_urls.redis) as client:
        result = await client.verify()
    assert result["ok"] is False, result
    assert result["firstBrokenId"] == str(first_of_newer)
    assert "deleted" in result["problem"]
    code, output = await _cli_verify(settings, fresh_dsn, service_urls.redis)
    assert code == 1, output
    assert f"BROKEN at row {first_of_newer}" in output


async def test_heads_exported_by_the_cli_catch_the_newest_segment_deleted_later(
    settings: Settings,
    fresh_dsn: str,
    service_urls: ServiceUrls,
    audit_db: Database,
    two_segments: tuple[str, str],
    tmp_path: Path,
) -> None:
    _, newest = two_segments
    code, out, err = await _cli(settings, fresh_dsn, service_urls.redis, "heads")
    assert code == 0, err
    assert {json.loads(line)["segment"] for line in out.splitlines()} == set(two_segments)
    heads = tmp_path / "heads.jsonl"
    heads.write_text(out, encoding="utf-8")
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = $1", newest)
    await execute(audit_db, "DELETE FROM rbac_audit_segment WHERE segment = $1", newest)
    # The database alone cannot tell: nothing after the newest segment vouches for it.
    code, out, err = await _cli(settings, fresh_dsn, service_urls.redis, "verify")
    assert code == 0, out + err
    code, out, err = await _cli(
        settings, fresh_dsn, service_urls.redis, "verify", "--heads", str(heads)
    )
    assert code == 1, out + err
    assert newest in out
    assert "exported heads" in out


def _unkeyed_rehash(row: Any, prev_hash: str) -> str:
    """The hash an attacker computes with the documented unkeyed formula."""
    canonical = [
        row["segment"], row["seq"], row["at"].isoformat(timespec="microseconds"),
        row["user_id"], list(row["groups"]), row["resource_type"], row["resource_name"],
        row["memory"], row["action"], row["decision"], row["reason"], row["policy_version"],
        row["trace_id"], row["client_addr"], row["job_id"], row["details"],
    ]  # fmt: skip
    text = json.dumps(
        canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return blake3(prev_hash.encode() + text.encode()).hexdigest()


async def test_a_deny_rewritten_to_allow_with_a_recomputed_unkeyed_chain_is_detected(
    settings: Settings,
    fresh_dsn: str,
    service_urls: ServiceUrls,
    audit_db: Database,
    two_segments: tuple[str, str],
) -> None:
    _, segment = two_segments
    async with audit_db.connection() as conn:
        rows = await conn.fetch(
            "SELECT * FROM rbac_audit_log WHERE segment = $1 ORDER BY seq", segment
        )
        target = next(row for row in rows if row["decision"] == "deny")
        prev = target["prev_hash"]
        # Rewrite the deny and re-chain every row after it, then move the head along.
        for row in rows[rows.index(target) :]:
            fields = dict(row)
            if row["id"] == target["id"]:
                fields.update(decision="allow", reason="role_requirement_met")
            new_hash = _unkeyed_rehash(fields, prev)
            await conn.execute(
                "UPDATE rbac_audit_log SET decision = $2, reason = $3, prev_hash = $4, "
                "chain_hash = $5 WHERE id = $1",
                row["id"], fields["decision"], fields["reason"], prev, new_hash,
            )  # fmt: skip
            prev = new_hash
        await conn.execute(
            "UPDATE rbac_audit_segment SET last_hash = $2 WHERE segment = $1", segment, prev
        )
    async with serving(settings, fresh_dsn, service_urls.redis) as client:
        result = await client.verify()
    assert result["ok"] is False, result
    assert result["firstBrokenId"] == str(target["id"])
    code, output = await _cli_verify(settings, fresh_dsn, service_urls.redis)
    assert code == 1, output
    assert f"BROKEN at row {target['id']}" in output


async def test_the_trace_id_is_the_servers_and_the_clients_request_id_is_kept_apart(
    settings: Settings, fresh_dsn: str, service_urls: ServiceUrls
) -> None:
    chosen = "client-chosen-id-0001"
    wanted = {"f": {"userId": "olga-outsider"}}
    async with serving(settings, fresh_dsn, service_urls.redis) as client:
        denied = await client.gql(VERIFY, None, token=client.outsider, **{"X-Request-Id": chosen})
        assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        traced = await client.gql(
            "query($f: AuditFilter) { auditLog(filter: $f) { edges { node { traceId } } } }",
            wanted,
            token=client.auditor,
        )
        body = await client.gql(LOG, wanted, token=client.auditor)
    [trace_id] = [edge["node"]["traceId"] for edge in traced["data"]["auditLog"]["edges"]]
    assert trace_id != chosen
    assert len(trace_id) == 32
    int(trace_id, 16)  # the server's own uuid4, in hex
    assert "errors" not in body, body
    [node] = [edge["node"] for edge in body["data"]["auditLog"]["edges"]]
    assert (node["decision"], node["traceId"], node["clientRequestId"]) == (
        "deny",
        trace_id,
        chosen,
    )
