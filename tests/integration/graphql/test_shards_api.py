"""exportShard / importShard: memory admin only, jobs as the composition root registers
them, an import reading what an export job wrote; an unknown export is NOT_FOUND."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.crypto.envelope import open_bytes
from fortemi.crypto.keys import Keypair, write_public_key_file
from fortemi.platform.ids import parse_id, to_global_id
from fortemi.platform.jobs.models import HandlerContext, JobOutcome
from fortemi.platform.notes import NoteDraft
from fortemi.runtime import Runtime, job_registry
from tests.integration.graphql.conftest import GraphQLCall, error_codes, open_memory

EXPORT = """
mutation($profile: ShardProfile!) {
  exportShard(profile: $profile) { id type status memory }
}
"""
IMPORT = """
mutation($from: ID!, $policy: ShardConflictPolicy!, $dry: Boolean!) {
  importShard(fromExport: $from, onConflict: $policy, dryRun: $dry) { id type status memory }
}
"""


async def _run(runtime: Runtime, global_id: str) -> JobOutcome:
    """Run the job's handler as a worker would, and settle the job with its outcome."""
    job = await runtime.services.jobs.get(parse_id(global_id, "Job"))
    assert job is not None
    handler = job_registry(runtime.settings)(runtime.db).get(job.type).handler

    async def nothing(*_: Any, **__: Any) -> Any:
        return None

    context = HandlerContext(
        job=job, report_progress=nothing, enqueue=nothing, escalate=nothing, publish=nothing
    )
    outcome = await handler(context)
    # What the worker's finish does with the outcome, without claiming from the shared
    # queue (another test's pending job must not be run here).
    async with runtime.db.shared_transaction() as conn:
        await conn.execute(
            "UPDATE public.job SET status = $2, result = $3, failure_code = $4, "
            "finished_at = $5 WHERE id = $1",
            job.id,
            "completed" if outcome.kind == "success" else "failed",
            outcome.result,
            outcome.failure_code,
            datetime.now(UTC),
        )
    return outcome


async def test_exporting_or_importing_a_shard_needs_memory_admin(gql: GraphQLCall) -> None:
    body = await gql(EXPORT, {"profile": "FULL_V1"})
    assert error_codes(body) == ["FORBIDDEN"]


async def test_an_export_job_imports_into_another_memory_as_a_job(
    gql: GraphQLCall, admin_token: str, memory: str, runtime: Runtime
) -> None:
    note = await runtime.notes.create(memory, NoteDraft(title="kept", content="c"), actor="t")
    body = await gql(EXPORT, {"profile": "CORE_V1"}, token=admin_token)
    assert "errors" not in body, body
    job = body["data"]["exportShard"]
    assert (job["type"], job["status"], job["memory"]) == ("ShardExport", "PENDING", memory)
    exported = await _run(runtime, job["id"])
    assert exported.result is not None
    assert exported.result["components"]["notes"] == 1
    assert exported.result["profile"] == "core-v1"
    other = await open_memory(runtime)
    try:
        variables = {"from": job["id"], "policy": "ERROR", "dry": False}
        body = await gql(IMPORT, variables, token=admin_token, memory=other)
        assert "errors" not in body, body
        imported = await _run(runtime, body["data"]["importShard"]["id"])
        assert imported.kind == "success", imported
        copy = await runtime.notes.get(other, note.id)
        assert copy is not None
        assert copy.title == "kept"
        # The same shard again, under the default policy: the job fails with the reason.
        body = await gql(IMPORT, variables, token=admin_token, memory=other)
        again = await _run(runtime, body["data"]["importShard"]["id"])
        assert again.failure_code == "shard_conflict"
    finally:
        await runtime.memories.delete(other, confirm=other)


async def test_an_unknown_export_is_not_found_and_a_non_admin_of_the_target_is_forbidden(
    gql: GraphQLCall, admin_token: str, issuer: LocalIssuer, runtime: Runtime
) -> None:
    body = await gql(EXPORT, {"profile": "FULL_V1"}, token=admin_token)
    source = body["data"]["exportShard"]["id"]
    await _run(runtime, source)
    other = await open_memory(runtime)
    try:
        unknown = {"from": to_global_id("Job", uuid4()), "policy": "SKIP", "dry": True}
        missing = await gql(IMPORT, unknown, token=admin_token, memory=other)
        assert error_codes(missing) == ["NOT_FOUND"]
        editor = issuer.mint("eve", groups=["data-team"], roles=["editor"])
        known = {"from": source, "policy": "SKIP", "dry": True}
        denied = await gql(IMPORT, known, token=editor, memory=other)
        assert error_codes(denied) == ["FORBIDDEN"]
    finally:
        await runtime.memories.delete(other, confirm=other)


@pytest.mark.parametrize("policy", ["SKIP", "REPLACE", "MERGE"])
async def test_every_conflict_policy_is_offered(
    gql: GraphQLCall, admin_token: str, policy: str, runtime: Runtime
) -> None:
    body = await gql(EXPORT, {"profile": "FULL_V1"}, token=admin_token)
    source = body["data"]["exportShard"]["id"]
    await _run(runtime, source)
    body = await gql(IMPORT, {"from": source, "policy": policy, "dry": False}, token=admin_token)
    assert "errors" not in body, body
    outcome = await _run(runtime, body["data"]["importShard"]["id"])
    assert outcome.kind == "success", outcome


async def test_the_export_downloads_as_an_attachment_to_its_memorys_admins_only(
    gql: GraphQLCall,
    client: httpx.AsyncClient,
    admin_token: str,
    user_token: str,
    runtime: Runtime,
    memory: str,
) -> None:
    body = await gql(EXPORT, {"profile": "FULL_V1"}, token=admin_token)
    job_id = body["data"]["exportShard"]["id"]
    await _run(runtime, job_id)

    anonymous = await client.get(f"/shards/{job_id}")
    editor = await client.get(f"/shards/{job_id}", headers=_bearer(user_token))
    unknown = await client.get(f"/shards/{uuid4()}", headers=_bearer(admin_token))
    admin = await client.get(f"/shards/{job_id}", headers=_bearer(admin_token))

    assert anonymous.status_code == 401
    assert (editor.status_code, unknown.status_code) == (404, 404)
    assert admin.status_code == 200
    assert admin.headers["content-disposition"].startswith("attachment;")
    assert admin.headers["x-content-type-options"] == "nosniff"
    with tarfile.open(fileobj=io.BytesIO(admin.content), mode="r:gz") as tar:
        assert tar.getnames()[0] == "manifest.json"
    async with runtime.db.shared_transaction() as conn:
        denied = await conn.fetchval(
            "SELECT count(*) FROM rbac_audit_log WHERE job_id = $1 AND decision = 'deny'",
            str(parse_id(job_id, "Job")),
        )
    assert denied == 1  # the editor's attempt is on record


async def test_an_export_encrypted_for_a_published_key_opens_only_with_that_key(
    gql: GraphQLCall,
    client: httpx.AsyncClient,
    admin_token: str,
    runtime: Runtime,
    tmp_path: Path,
) -> None:
    keypair = Keypair.generate()
    write_public_key_file(tmp_path / "k.pub", keypair.public)
    key_text = (tmp_path / "k.pub").read_text(encoding="utf-8")
    await runtime.services.keys.publish("root", key_text, None)
    address = str(keypair.address)
    body = await gql(
        "mutation($to: [String!]) { exportShard(profile: CORE_V1, encryptFor: $to) { id } }",
        {"to": [address]},
        token=admin_token,
    )
    assert "errors" not in body, body
    job_id = body["data"]["exportShard"]["id"]
    outcome = await _run(runtime, job_id)
    assert outcome.result is not None
    assert outcome.result["encrypted_for"] == [address]

    sealed = (await client.get(f"/shards/{job_id}", headers=_bearer(admin_token))).content
    assert sealed.startswith(b"MMPKE01\n")
    with tarfile.open(fileobj=io.BytesIO(open_bytes(sealed, keypair)), mode="r:gz") as tar:
        assert tar.getnames()[0] == "manifest.json"
    # The server holds no private key: importing the sealed shard there fails, saying why.
    body = await gql(IMPORT, {"from": job_id, "policy": "SKIP", "dry": True}, token=admin_token)
    failed = await _run(runtime, body["data"]["importShard"]["id"])
    assert failed.failure_code == "shard_encrypted"


async def test_an_unpublished_recipient_is_refused_before_a_job_is_queued(
    gql: GraphQLCall, admin_token: str
) -> None:
    stranger = str(Keypair.generate().address)
    body = await gql(
        "mutation($to: [String!]) { exportShard(encryptFor: $to) { id } }",
        {"to": [stranger]},
        token=admin_token,
    )
    assert error_codes(body) == ["NOT_FOUND"]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
