"""Graph maintenance and reprocessing through GraphQL: memory admin runs maintenance (a
job, or a dry run's report now; an SNN safety abort is CONFLICT with its reason) and reads
snapshots; bulkReprocessNotes checks every note before it enqueues anything."""

from __future__ import annotations

import numpy as np
import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.graph.maintenance.plan import Step
from fortemi.platform.ids import parse_note_id
from fortemi.platform.notes import NoteDraft
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSets
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

RUN = """
mutation($steps: [MaintenanceStep!], $dry: Boolean!, $allow: Boolean! = false) {
  runGraphMaintenance(steps: $steps, dryRun: $dry, allowAggressivePruning: $allow) {
    job { id type status memory }
    report { steps dryRun metrics }
  }
}
"""
REPROCESS = """
mutation($ids: [ID!]!, $steps: [ReprocessStep!]!) {
  bulkReprocessNotes(ids: $ids, steps: $steps) { id type status memory }
}
"""


@pytest.fixture(scope="module")
def viewer(issuer: LocalIssuer) -> str:
    return issuer.mint("vera-viewer", groups=["data-team"], roles=["viewer"])


async def _note(gql: GraphQLCall, title: str) -> str:
    body = await gql(
        "mutation($t: String!) { createNote(input: {title: $t, content: $t}) { id } }",
        {"t": title},
    )
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


async def _cancel(gql: GraphQLCall, token: str, job_ids: list[str]) -> None:
    for job_id in job_ids:
        await gql(
            "mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": job_id}, token=token
        )


async def test_running_maintenance_needs_memory_admin(gql: GraphQLCall) -> None:
    body = await gql(RUN, {"dry": True})
    assert error_codes(body) == ["FORBIDDEN"]
    body = await gql("{ graphSnapshots { id } }")
    assert error_codes(body) == ["FORBIDDEN"]


async def test_a_dry_run_reports_now_and_writes_no_snapshot(
    gql: GraphQLCall, admin_token: str
) -> None:
    body = await gql(RUN, {"dry": True, "steps": ["NORMALIZE", "COMMUNITIES"]}, token=admin_token)
    assert "errors" not in body, body
    run = body["data"]["runGraphMaintenance"]
    assert run["job"] is None
    assert run["report"]["dryRun"] is True
    assert run["report"]["steps"] == ["normalize", "communities"]
    assert run["report"]["metrics"]["nodes"] == 0
    snapshots = await gql("{ graphSnapshots { id } }", token=admin_token)
    assert snapshots["data"]["graphSnapshots"] == []


async def test_a_real_run_is_a_graph_maintenance_job(
    gql: GraphQLCall, admin_token: str, memory: str
) -> None:
    body = await gql(RUN, {"dry": False}, token=admin_token)
    assert "errors" not in body, body
    job = body["data"]["runGraphMaintenance"]["job"]
    try:
        assert (job["type"], job["status"], job["memory"]) == (
            "GraphMaintenance",
            "PENDING",
            memory,
        )
        assert body["data"]["runGraphMaintenance"]["report"] is None
    finally:
        await _cancel(gql, admin_token, [job["id"]])


async def _clustered_graph(runtime: Runtime, memory: str) -> None:
    """48 notes in 8 tight clusters of 6 (each note's 5 nearest are its cluster), linked
    only across clusters, 12 links each: SNN finds no shared neighbour on any link."""
    notes = [
        await runtime.notes.create(memory, NoteDraft(title=f"n{i}", content=""), actor="test")
        for i in range(48)
    ]
    vectors = []
    for i in range(48):
        v = np.zeros(16, dtype=np.float32)
        v[i // 6] = 1.0
        v[8 + i % 6] = 0.05
        vectors.append(v / np.linalg.norm(v))
    async with runtime.db.memory_transaction(memory) as conn:
        chosen = await EmbeddingSets().ensure(conn, "test-model", 16, DocumentComposition())
        await conn.executemany(
            "INSERT INTO note_embedding (set_id, note_id, embedding) VALUES ($1, $2, $3)",
            [(chosen.id, note.id, vector) for note, vector in zip(notes, vectors, strict=True)],
        )
        links = []
        for i, note in enumerate(notes):
            cluster = i // 6
            for j in range(6):
                other = notes[((cluster + 1) % 8) * 6 + j]
                links += [(note.id, other.id), (other.id, note.id)]
        await conn.executemany(
            "INSERT INTO note_link (source_id, target_id, kind, score) "
            "VALUES ($1, $2, 'semantic', 0.8) ON CONFLICT DO NOTHING",
            links,
        )


async def test_an_snn_plan_that_would_prune_nearly_everything_is_a_conflict(
    gql: GraphQLCall, admin_token: str, runtime: Runtime, memory: str
) -> None:
    await _clustered_graph(runtime, memory)
    body = await gql(RUN, {"dry": True}, token=admin_token)
    assert error_codes(body) == ["CONFLICT"]
    error = body["errors"][0]
    assert error["extensions"]["reason"] == "snn_safety_aborted"
    assert "allowAggressivePruning" in error["message"]
    allowed = await gql(RUN, {"dry": True, "allow": True}, token=admin_token)
    assert "errors" not in allowed, allowed
    snn = allowed["data"]["runGraphMaintenance"]["report"]["metrics"]["snn"]
    assert (snn["status"], snn["edgesAfter"]) == ("ran", 0)


async def test_snapshots_are_listed_and_compared(
    gql: GraphQLCall, admin_token: str, runtime: Runtime, memory: str
) -> None:
    service = runtime.services.maintenance
    first = await service.run(memory, [Step.NORMALIZE], actor="test")
    await _clustered_graph(runtime, memory)
    second = await service.run(memory, [Step.NORMALIZE, Step.COMMUNITIES], actor="test")
    assert first.snapshot is not None
    assert second.snapshot is not None
    listed = await gql("{ graphSnapshots { id steps createdBy } }", token=admin_token)
    assert listed["data"]["graphSnapshots"] == [
        {"id": str(second.snapshot.id), "steps": ["normalize", "communities"], "createdBy": "test"},
        {"id": str(first.snapshot.id), "steps": ["normalize"], "createdBy": "test"},
    ]
    compared = await gql(
        "query($a: ID!, $b: ID!) { compareGraphSnapshots(a: $a, b: $b) "
        "{ changes { name before after delta } } }",
        {"a": str(first.snapshot.id), "b": str(second.snapshot.id)},
        token=admin_token,
    )
    changes = {c["name"]: c for c in compared["data"]["compareGraphSnapshots"]["changes"]}
    assert changes["nodes"] == {"name": "nodes", "before": 0.0, "after": 48.0, "delta": 48.0}
    assert changes["communities.count"]["before"] is None
    count = second.metrics["communities"]["count"]
    assert count >= 1
    assert changes["communities.count"]["after"] == float(count)
    missing = await gql(
        '{ compareGraphSnapshots(a: "1", b: "999999") { changes { name } } }',
        token=admin_token,
    )
    assert error_codes(missing) == ["NOT_FOUND"]


async def test_bulk_reprocess_enqueues_linking_or_embedding_per_note(
    gql: GraphQLCall, admin_token: str
) -> None:
    ids = [await _note(gql, f"note {i}") for i in range(2)]
    body = await gql(REPROCESS, {"ids": ids, "steps": ["LINKING"]})
    assert "errors" not in body, body
    linking = body["data"]["bulkReprocessNotes"]
    assert [job["type"] for job in linking] == ["Linking", "Linking"]
    body = await gql(REPROCESS, {"ids": ids, "steps": ["EMBEDDING", "LINKING"]})
    embedding = body["data"]["bulkReprocessNotes"]
    # Linking follows each embedding on its own; the note's pending Embedding job is reused.
    assert [job["type"] for job in embedding] == ["Embedding", "Embedding"]
    await _cancel(gql, admin_token, [job["id"] for job in linking + embedding])


async def test_bulk_reprocess_tagging_enqueues_the_notes_concept_tagging(
    gql: GraphQLCall, admin_token: str
) -> None:
    note = await _note(gql, "to tag")
    body = await gql(REPROCESS, {"ids": [note], "steps": ["TAGGING"]})
    assert "errors" not in body, body
    jobs = body["data"]["bulkReprocessNotes"]
    # The note's pending tagging job (its creation queued one) is the one returned.
    assert [job["type"] for job in jobs] == ["ConceptTagging"]
    await _cancel(gql, admin_token, [job["id"] for job in jobs])


async def test_bulk_reprocess_checks_every_note_before_enqueueing_anything(
    gql: GraphQLCall, viewer: str, runtime: Runtime, memory: str
) -> None:
    note = await _note(gql, "kept")
    unknown = "00000000-0000-0000-0000-000000000001"
    body = await gql(REPROCESS, {"ids": [note, unknown], "steps": ["LINKING"]})
    assert error_codes(body) == ["NOT_FOUND"]
    body = await gql(REPROCESS, {"ids": [note], "steps": ["LINKING"]}, token=viewer)
    assert error_codes(body) == ["FORBIDDEN"]
    async with runtime.db.shared_transaction() as conn:
        queued = await conn.fetchval(
            "SELECT count(*) FROM public.job WHERE memory = $1 AND type = 'Linking' "
            "AND payload->>'note_id' = $2",
            memory,
            str(parse_note_id(note)),
        )
    assert queued == 0
