"""Jobs through GraphQL: bulk purge as a job, reading, cancelling, retrying, pausing."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from tests.integration.graphql.conftest import GraphQLCall, error_codes

JOB_FIELDS = "id type memory tier priority status attempts maxAttempts dedupeKey requestedBy"


@pytest.fixture(scope="module")
def outsider(issuer: LocalIssuer) -> str:
    # No role: the open test memory needs at least viewer, so none of its jobs are visible.
    return issuer.mint("otto-outsider", groups=["data-team"])


async def _deleted_note(gql: GraphQLCall, title: str) -> str:
    created = await gql(
        "mutation($t: String!) { createNote(input: {title: $t}) { id } }", {"t": title}
    )
    note_id: str = created["data"]["createNote"]["id"]
    await gql("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": note_id})
    return note_id


async def _purge_job(gql: GraphQLCall, note_ids: list[str]) -> dict[str, Any]:
    body = await gql(
        f"mutation($ids: [ID!]!) {{ purgeNotes(ids: $ids) {{ {JOB_FIELDS} }} }}", {"ids": note_ids}
    )
    assert "errors" not in body, body
    job: dict[str, Any] = body["data"]["purgeNotes"]
    return job


async def _cancel(gql: GraphQLCall, job_id: str) -> dict[str, Any]:
    body = await gql("mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": job_id})
    return body


async def test_purge_notes_enqueues_one_purge_job_in_the_requests_memory(
    gql: GraphQLCall, memory: str
) -> None:
    ids = [await _deleted_note(gql, f"old {i}") for i in range(3)]
    job = await _purge_job(gql, ids)
    try:
        assert (job["type"], job["memory"], job["tier"], job["status"]) == (
            "PurgeNote",
            memory,
            "CPU",
            "PENDING",
        )
        assert job["requestedBy"] == "alice"
        read = await gql(
            f"query($id: ID!) {{ job(id: $id) {{ {JOB_FIELDS} }} }}", {"id": job["id"]}
        )
        assert read["data"]["job"] == job
        listed = await gql('{ jobs(filter: {type: "PurgeNote"}) { edges { node { id } } } }')
        assert [e["node"]["id"] for e in listed["data"]["jobs"]["edges"]] == [job["id"]]
    finally:
        await _cancel(gql, job["id"])


async def test_purging_a_note_you_cannot_read_is_not_found(gql: GraphQLCall, outsider: str) -> None:
    note_id = await _deleted_note(gql, "private")
    body = await gql(
        "mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }",
        {"ids": [note_id]},
        token=outsider,
    )
    assert error_codes(body) == ["NOT_FOUND"]


async def test_jobs_of_a_memory_you_cannot_read_are_invisible(
    gql: GraphQLCall, outsider: str
) -> None:
    job = await _purge_job(gql, [await _deleted_note(gql, "x")])
    try:
        seen = await gql(
            "query($id: ID!) { job(id: $id) { id } }", {"id": job["id"]}, token=outsider
        )
        assert seen["data"] == {"job": None}
        cancel = await gql(
            "mutation($id: ID!) { cancelJob(id: $id) { id } }", {"id": job["id"]}, token=outsider
        )
        assert error_codes(cancel) == ["NOT_FOUND"]
    finally:
        await _cancel(gql, job["id"])


async def test_a_cancelled_job_can_be_retried_and_a_finished_one_not_cancelled_twice(
    gql: GraphQLCall,
) -> None:
    job = await _purge_job(gql, [await _deleted_note(gql, "y")])
    cancelled = await _cancel(gql, job["id"])
    assert cancelled["data"] == {"cancelJob": {"status": "CANCELLED"}}
    again = await _cancel(gql, job["id"])
    assert error_codes(again) == ["CONFLICT"]
    retried = await gql(
        "mutation($id: ID!) { retryJob(id: $id) { status attempts } }", {"id": job["id"]}
    )
    assert retried["data"]["retryJob"] == {"status": "PENDING", "attempts": 0}
    await _cancel(gql, job["id"])


async def test_pausing_needs_admin_on_the_memory_and_stats_need_system_rights(
    gql: GraphQLCall, admin_token: str, memory: str
) -> None:
    refused = await gql("mutation($m: String) { pauseJobs(memory: $m) }", {"m": memory})
    assert error_codes(refused) == ["FORBIDDEN"]
    stats = await gql("{ jobStats { byStatus { key count } oldestPendingAt } }")
    assert error_codes(stats) == ["FORBIDDEN"]
    as_admin = await gql("{ jobStats { byStatus { key count } } }", token=admin_token)
    keys = [row["key"] for row in as_admin["data"]["jobStats"]["byStatus"]]
    assert keys == sorted(["pending", "running", "completed", "failed", "cancelled"])
