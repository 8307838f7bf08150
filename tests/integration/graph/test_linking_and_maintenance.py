"""Automatic links and graph maintenance end to end on the real database and the local
embedding model: embedding enqueues linking, linking writes reciprocal semantic links and
enqueues maintenance, maintenance prunes, groups and snapshots; runs are idempotent, a
dry run and an SNN safety abort write nothing."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import pytest

from fortemi.graph.linking.jobs import LINKING, linking_followups, linking_job_type
from fortemi.graph.linking.service import LinkingSettings, NoteLinker
from fortemi.graph.maintenance.jobs import GRAPH_MAINTENANCE, maintenance_job_type
from fortemi.graph.maintenance.plan import MaintenanceSettings, Step
from fortemi.graph.maintenance.service import GraphMaintenance
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.events import Event
from fortemi.platform.ids import to_global_id
from fortemi.platform.jobs.models import JobSpec, Tier
from fortemi.retrieval.indexing import Chunking, embedding_job_type
from tests.integration.graph.conftest import Write, run_job

TOPICS = {
    "cats": [
        ("Cats sleep", "Domestic cats sleep for most of the day and hunt at dawn and dusk."),
        ("Kitten care", "A kitten needs warmth, frequent meals and gentle handling by people."),
        ("Cat behaviour", "Cats purr when content and knead soft blankets with their paws."),
        ("Feline diet", "Cats are obligate carnivores; their food must contain taurine."),
        ("Indoor cats", "Indoor cats need scratching posts and play to stay healthy."),
    ],
    "databases": [
        ("Postgres indexes", "A B-tree index in PostgreSQL speeds up equality and range queries."),
        ("Vacuum", "PostgreSQL's vacuum reclaims space left by dead tuples after updates."),
        ("Query plans", "EXPLAIN ANALYZE shows the plan the database chose and its real costs."),
        ("Transactions", "Database transactions are atomic, consistent, isolated and durable."),
        ("Replication", "Streaming replication ships the write-ahead log to standby servers."),
    ],
}


async def _build(
    db: Database,
    memory: str,
    write: Write,
    backend: LocalEmbeddingBackend,
    *,
    vocabulary: VocabularyService | None = None,
) -> tuple[list[UUID], list[JobSpec]]:
    """Write the notes, run Embedding (with linking as its follow-up) then each Linking
    job; the maintenance specs linking enqueued are returned.

    Each Linking job writes its note's vector, so the first notes linked saw only the
    notes before them; the Linking jobs run a second time (what ``bulkReprocessNotes``
    with LINKING does), when every note has its vector."""
    ids = [await write(title, content) for notes in TOPICS.values() for title, content in notes]
    if vocabulary is not None:  # each note gets its topic as a concept
        for i, note_id in enumerate(ids):
            topic = list(TOPICS)[i // 5]
            proposal = ConceptProposal(("topics", topic), None, 0.9, 0.9)
            await vocabulary.tag_note(memory, note_id, [proposal], source="api", actor="test")
    embedding = embedding_job_type(
        db, backend, Chunking(size=300, overlap=50), tier=Tier.CPU, followups=linking_followups
    )
    linking_specs: list[JobSpec] = []
    for note_id in ids:
        outcome = await run_job(embedding, memory, {"note_id": str(note_id)}, linking_specs)
        assert outcome.kind == "success"
    assert [spec.type for spec in linking_specs] == [LINKING] * len(ids)
    assert linking_specs[0].dedupe_key == f"{LINKING}:{memory}:{ids[0]}"
    linking = linking_job_type(NoteLinker(db, vocabulary))
    maintenance_specs: list[JobSpec] = []
    for spec in [*linking_specs, *linking_specs]:
        outcome = await run_job(linking, memory, spec.payload, maintenance_specs)
        assert outcome.kind == "success", outcome
    return ids, maintenance_specs


async def _links(db: Database, memory: str) -> list[tuple[Any, ...]]:
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT source_id, target_id, kind, score, rank, metadata, set_id, model, snn, "
            "pruned FROM note_link ORDER BY source_id, target_id"
        )
    return [tuple(row) for row in rows]


async def _graph_rows(db: Database, memory: str) -> dict[str, list[tuple[Any, ...]]]:
    async with db.memory_transaction(memory) as conn:
        return {
            "links": [tuple(r) for r in await conn.fetch(
                "SELECT source_id, target_id, kind, score, rank, metadata, snn, pruned "
                "FROM note_link ORDER BY 1, 2, 3")],
            "vectors": [tuple(r) for r in await conn.fetch(
                "SELECT set_id, note_id, embedding::text FROM note_embedding ORDER BY 1, 2")],
            "notes": [tuple(r) for r in await conn.fetch(
                "SELECT note_id, community, confidence FROM note_community ORDER BY 1")],
            "communities": [tuple(r) for r in await conn.fetch(
                "SELECT community, label, concept_id, size FROM graph_community ORDER BY 1")],
            "snapshots": [tuple(r) for r in await conn.fetch(
                "SELECT id FROM graph_snapshot ORDER BY 1")],
        }  # fmt: skip


async def test_embedding_then_linking_links_every_note_both_ways_and_asks_for_maintenance(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    ids, maintenance = await _build(db, memory, write, local_backend)
    assert {spec.type for spec in maintenance} == {GRAPH_MAINTENANCE}
    events: list[Event] = []
    await run_job(linking_job_type(NoteLinker(db)), memory, {"note_id": str(ids[0])}, [], events)
    assert [(e.type, e.payload["noteId"]) for e in events] == [
        ("graph.linked", to_global_id("Note", ids[0]))
    ]
    assert {spec.dedupe_key for spec in maintenance} == {f"{GRAPH_MAINTENANCE}:{memory}"}
    links = await _links(db, memory)
    assert links, "the notes were linked"
    pairs = {(row[0], row[1]) for row in links}
    assert all((target, source) in pairs for source, target in pairs)  # reciprocal
    linked = {row[0] for row in links}
    assert linked == set(ids)  # every note has at least one link
    for row in links:
        kind, score, rank, metadata, set_id, model = row[2:8]
        assert kind == "semantic"
        assert 0.0 <= score <= 1.0
        assert rank >= 1
        assert set_id is not None
        assert model == "sentence-transformers/all-MiniLM-L6-v2"
        assert metadata["k"] == 5  # floor(log2 10) = 3, clamped up to 5
        assert metadata["strategy"] in {"hnsw_heuristic", "fallback"}
        assert metadata["fallback"] == (metadata["strategy"] == "fallback")
        assert metadata["weight"] == 0.0  # no concepts on these notes
        assert metadata["rank"] == rank
    async with db.memory_transaction(memory) as conn:
        vectors = await conn.fetchval("SELECT count(*) FROM note_embedding")
        index = await conn.fetchval(
            "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'note_embedding_hnsw_%'"
        )
    assert (vectors, index) == (len(ids), 1)


async def test_links_stay_within_a_topic(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    ids, _ = await _build(db, memory, write, local_backend)
    topic = {note: i // 5 for i, note in enumerate(ids)}
    links = await _links(db, memory)
    across = [row for row in links if topic[row[0]] != topic[row[1]]]
    assert not across, "no link joins a note about cats to one about databases"


async def test_linking_twice_leaves_the_same_rows(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    ids, _ = await _build(db, memory, write, local_backend)
    before = await _graph_rows(db, memory)
    linker = NoteLinker(db)
    for note_id in reversed(ids):
        await linker.link(memory, note_id)
    assert await _graph_rows(db, memory) == before


async def test_a_note_under_the_threshold_gets_its_single_best_match_as_a_fallback(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    ids, _ = await _build(db, memory, write, local_backend)
    strict = NoteLinker(db, settings=LinkingSettings(min_score=0.99))
    outcome = await strict.link(memory, ids[0])
    assert [link.fallback for link in outcome.links] == [True]
    rows = [row for row in await _links(db, memory) if str(ids[0]) in row[5]["origins"]]
    assert {row[5]["strategy"] for row in rows} == {"fallback"}


async def test_maintenance_prunes_groups_and_snapshots_and_runs_idempotently(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    ids, specs = await _build(db, memory, write, local_backend)
    job = maintenance_job_type(GraphMaintenance(db))
    events: list[Event] = []
    outcome = await run_job(job, memory, specs[-1].payload, published=events)
    assert outcome.kind == "success", outcome
    assert outcome.result is not None
    assert [(e.type, e.memory, e.payload["snapshotId"]) for e in events] == [
        ("graph.maintained", memory, outcome.result["snapshotId"])
    ]
    metrics = outcome.result["metrics"]
    assert metrics["nodes"] == len(ids)
    assert metrics["snn"]["status"] in {"ran", "skipped"}
    assert metrics["pfnet"]["edgesBefore"] >= metrics["pfnet"]["edgesAfter"]
    assert metrics["communities"]["count"] >= 2
    assert {"min", "max", "gamma"} <= set(metrics["normalize"])
    rows = await _graph_rows(db, memory)
    assert len(rows["notes"]) == len(ids)
    assert len(rows["snapshots"]) == 1
    # PFNET's flags are on both rows of each pruned pair, and on no other.
    assert sum(1 for row in rows["links"] if row[7]) == 2 * metrics["pfnet"]["pruned"]
    topic = {note: i // 5 for i, note in enumerate(ids)}
    community = {note: c for note, c, _ in rows["notes"]}
    # The two topics never share a community.
    assert not {community[n] for n in ids[:5]} & {community[n] for n in ids[5:]}
    assert all(0.0 <= confidence <= 1.0 for _, _, confidence in rows["notes"])
    assert all(topic[n] in (0, 1) for n in community)

    again = await run_job(job, memory, specs[-1].payload)
    assert again.kind == "success"
    after = await _graph_rows(db, memory)
    assert after["links"] == rows["links"]
    assert after["notes"] == rows["notes"]
    assert after["communities"] == rows["communities"]
    assert len(after["snapshots"]) == 2


async def _row_versions(db: Database, memory: str) -> dict[tuple[UUID, UUID], str]:
    """Each semantic row's xmin: it changes exactly when the row is rewritten."""
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT source_id, target_id, xmin::text FROM note_link WHERE kind = 'semantic'"
        )
    return {(row[0], row[1]): row[2] for row in rows}


async def test_a_run_rewrites_only_the_link_rows_whose_flags_or_scores_change(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    await _build(db, memory, write, local_backend)
    maintenance = GraphMaintenance(db)
    first = await maintenance.run(memory, list(Step))
    assert first.metrics["pfnet"]["edgesBefore"] > 0
    settled = await _row_versions(db, memory)
    await maintenance.run(memory, list(Step))
    assert await _row_versions(db, memory) == settled  # nothing to change: nothing written

    # One pair's flag is wrong on both its rows: the next run puts back those two only.
    (a, b) = min(p for p in settled if p[0] < p[1])
    async with db.memory_transaction(memory) as conn:
        await conn.execute(
            "UPDATE note_link SET pruned = NOT pruned WHERE kind = 'semantic' "
            "AND ((source_id = $1 AND target_id = $2) OR (source_id = $2 AND target_id = $1))",
            a,
            b,
        )
    flipped = await _row_versions(db, memory)
    before = await _links(db, memory)
    await maintenance.run(memory, list(Step))
    after = await _row_versions(db, memory)
    assert {p for p in after if after[p] != flipped[p]} == {(a, b), (b, a)}
    assert [row[9] for row in await _links(db, memory) if {row[0], row[1]} == {a, b}] == [
        not row[9] for row in before if {row[0], row[1]} == {a, b}
    ]


async def test_shared_concepts_weigh_in_links_and_name_communities(
    db: Database,
    memory: str,
    write: Write,
    local_backend: LocalEmbeddingBackend,
    vocabulary: VocabularyService,
) -> None:
    ids, _ = await _build(db, memory, write, local_backend, vocabulary=vocabulary)
    links = await _links(db, memory)
    assert {row[0] for row in links} == set(ids)
    for row in links:
        metadata = row[5]
        assert metadata["weight"] == 0.3  # both ends have concepts
        # Every link joins one topic (overlap 1.0): 0.7 x similarity + 0.3.
        assert metadata["overlap"] == 1.0
        assert row[3] == pytest.approx(0.7 * metadata["similarity"] + 0.3, abs=1e-5)
    report = await GraphMaintenance(db, vocabulary).run(memory, [Step.COMMUNITIES])
    assert report.snapshot is not None
    async with db.memory_transaction(memory) as conn:
        labels = await conn.fetch("SELECT label FROM graph_community ORDER BY community")
    assert {row["label"] for row in labels} == {"cats", "databases"}


async def test_a_dry_run_reports_and_writes_nothing(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    await _build(db, memory, write, local_backend)
    before = await _graph_rows(db, memory)
    report = await GraphMaintenance(db).run(memory, list(Step), dry_run=True)
    assert report.dry_run
    assert report.snapshot is None
    assert report.metrics["communities"]["count"] >= 2
    assert await _graph_rows(db, memory) == before


async def _link_every_pair(db: Database, memory: str, ids: list[UUID]) -> None:
    """A dense semantic graph (every pair), as many candidate links would make."""
    async with db.memory_transaction(memory) as conn:
        await conn.executemany(
            "INSERT INTO note_link (source_id, target_id, kind, score, metadata) "
            "VALUES ($1, $2, 'semantic', 0.8, '{}') ON CONFLICT DO NOTHING",
            [(a, b) for a in ids for b in ids if a != b],
        )


async def test_snn_that_would_prune_too_much_aborts_the_job_and_writes_nothing(
    db: Database, memory: str, write: Write, local_backend: LocalEmbeddingBackend
) -> None:
    ids, _ = await _build(db, memory, write, local_backend)
    await _link_every_pair(db, memory, ids)
    before = await _graph_rows(db, memory)
    # Demand that SNN keep 99 % of the links: the cross-topic pairs share no neighbours.
    cautious = MaintenanceSettings(snn_min_kept_share=0.99)
    job = maintenance_job_type(GraphMaintenance(db, settings=cautious))
    outcome = await run_job(job, memory, {})
    assert (outcome.kind, outcome.failure_code) == ("failure", "snn_safety_aborted")
    assert await _graph_rows(db, memory) == before

    allowed = await run_job(job, memory, {"allow_aggressive_pruning": True})
    assert allowed.kind == "success"
    assert allowed.result is not None
    assert allowed.result["metrics"]["snn"]["status"] == "ran"
    assert allowed.result["metrics"]["snn"]["knnMs"] >= 0  # kNN, started beside the read
    after = await _graph_rows(db, memory)
    assert len(after["links"]) < len(before["links"])
    topic = {note: i // 5 for i, note in enumerate(ids)}
    kept = [row for row in after["links"] if row[2] == "semantic"]
    assert all(row[6] is not None and row[6] >= 0.10 for row in kept)
    assert sum(topic[row[0]] != topic[row[1]] for row in kept) < sum(
        topic[row[0]] != topic[row[1]] for row in before["links"]
    )


@pytest.mark.parametrize("payload", [{"steps": ["nonsense"]}, {"set_id": "x"}, {"dry_run": 1}])
async def test_a_maintenance_payload_it_cannot_read_fails_for_good(
    db: Database, memory: str, payload: dict[str, Any]
) -> None:
    job = maintenance_job_type(GraphMaintenance(db))
    outcome = await run_job(job, memory, payload)
    assert (outcome.kind, outcome.failure_code) == ("failure", "invalid_payload")


async def test_an_embedding_run_that_writes_nothing_enqueues_no_linking(
    db: Database, memory: str, local_backend: LocalEmbeddingBackend
) -> None:
    embedding = embedding_job_type(
        db,
        local_backend,
        Chunking(size=300, overlap=50),
        tier=Tier.CPU,
        followups=linking_followups,
    )
    enqueued: list[JobSpec] = []
    outcome = await run_job(embedding, memory, {"note_id": str(uuid4())}, enqueued)
    assert (outcome.kind, outcome.result) == ("success", {"skipped": "note_gone"})
    assert enqueued == []


async def test_linking_a_note_without_vectors_is_skipped_and_asks_for_no_maintenance(
    db: Database, memory: str, write: Write
) -> None:
    note_id = await write("Not embedded yet", "No Embedding job has run for this note.")
    enqueued: list[JobSpec] = []
    job = linking_job_type(NoteLinker(db))
    outcome = await run_job(job, memory, {"note_id": str(note_id)}, enqueued)
    assert (outcome.kind, outcome.result) == ("success", {"skipped": "not_embedded"})
    assert enqueued == []
    assert await _links(db, memory) == []
