"""The CPU tier with the real local embedding model: keyphrases and reused vocabulary
become the note's ai_auto concepts, without a generation model and without touching the
note; too few concepts and no generation backend end the chain cleanly."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fortemi.graph.tagging.jobs import CONCEPT_TAGGING
from fortemi.graph.tagging.related import RELATED_CONCEPT_INFERENCE
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Tier
from fortemi.platform.notes import NoteService
from tests.integration.graph.tagging.conftest import make_job, run_handler

TITLE = "Pruning a knowledge graph with shared nearest neighbours"
CONTENT = """Automatic links between notes are computed from embedding similarity. Hub notes
attract too many links, so we prune edges with the shared nearest neighbour (SNN) score and
then apply the Pathfinder network (PFNET) to keep only the relative neighbourhood graph.
Louvain community detection then groups notes into labelled communities. The PostgreSQL
database stores vectors with pgvector and an HNSW index."""


async def _concepts(vocabulary: VocabularyService, memory: str, note_id: UUID) -> list[Any]:
    return (await vocabulary.note_concepts(memory, [note_id])).get(note_id, [])


async def test_the_cpu_tier_attaches_keyphrases_as_ai_auto_concepts_with_one_primary(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Any,
) -> None:
    note_id = await write(TITLE, CONTENT)
    run = await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))

    assert run.result["tier"] == "cpu"
    assert run.result["reason"] == "enough_concepts"
    assert run.escalations == []
    concepts = await _concepts(vocabulary, memory, note_id)
    labels = {c.label.lower() for c in concepts}
    assert 5 <= len(concepts) <= 15
    assert run.result["concepts"] == len(concepts)
    assert {"knowledge graph", "shared nearest neighbour", "community detection"} <= labels
    assert {c.source for c in concepts} == {"ai_auto"}
    assert sum(c.primary for c in concepts) == 1
    assert all(0.3 <= c.confidence <= 1.0 for c in concepts)
    # The finished chain hands the note to related-concept inference, once.
    assert [(s.type, s.payload) for s in run.enqueued] == [
        (RELATED_CONCEPT_INFERENCE, {"note_id": str(note_id)})
    ]
    [event] = run.events
    assert event.type == "note.concepts_changed"


async def test_tagging_changes_neither_the_note_nor_its_version_and_enqueues_no_embedding(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    notes: NoteService,
    memory: str,
    write: Any,
) -> None:
    note_id = await write(TITLE, CONTENT)
    before = await notes.get(memory, note_id)
    await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))
    after = await notes.get(memory, note_id)
    assert before is not None
    assert after is not None

    assert (after.version, after.updated_at, after.tags) == (
        before.version,
        before.updated_at,
        before.tags,
    )
    jobs = await db.fetchval("SELECT count(*) FROM public.job WHERE memory = $1", memory)
    assert jobs == 0


async def test_the_cpu_tier_reuses_existing_concepts_near_the_note_and_leaves_far_ones(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Any,
) -> None:
    other = await write("elsewhere", "another note")
    existing = await vocabulary.tag_note(
        memory,
        other,
        [
            ConceptProposal(("mathematics", "graph theory"), "domain", 1.0, 1.0),
            ConceptProposal(("clustering",), "technique", 1.0, 1.0),
            ConceptProposal(("gardening",), "topic", 1.0, 1.0),
            ConceptProposal(("PFNET",), "technique", 1.0, 1.0),
        ],
        source="api",
        actor="test",
    )
    ids = {c.label: c.concept_id for c in existing}
    note_id = await write(TITLE, CONTENT)
    await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))

    concepts = {c.label: c for c in await _concepts(vocabulary, memory, note_id)}
    # Near in meaning (graph theory, clustering) or named in the text (PFNET): the same
    # concepts, with the dimension they already had; gardening is not near.
    assert concepts["graph theory"].concept_id == ids["graph theory"]
    assert concepts["graph theory"].dimension == "domain"
    assert concepts["clustering"].concept_id == ids["clustering"]
    assert concepts["PFNET"].concept_id == ids["PFNET"]
    assert "gardening" not in concepts
    assert "mathematics" not in concepts  # the broader chain is the vocabulary's, not the note's


async def test_the_same_note_gets_the_same_concepts_every_time(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Any,
) -> None:
    note_id = await write(TITLE, CONTENT)
    first = await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))
    labels = {c.label for c in await _concepts(vocabulary, memory, note_id)}
    second = await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))

    assert first.result == second.result
    assert {c.label for c in await _concepts(vocabulary, memory, note_id)} == labels


async def test_too_few_concepts_without_a_generation_backend_complete_as_generation_unavailable(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Any,
) -> None:
    note_id = await write("Louvain", "resolution")
    run = await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))

    assert run.result["reason"] == "generation_unavailable"
    assert run.result["found"] < 5
    assert run.escalations == []
    # What it found is still written: a CPU-only install gets concepts.
    concepts = await _concepts(vocabulary, memory, note_id)
    assert {c.label.lower() for c in concepts} >= {"louvain"}
    assert [s.type for s in run.enqueued] == [RELATED_CONCEPT_INFERENCE]


async def test_a_deleted_note_is_skipped(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    notes: NoteService,
    memory: str,
    write: Any,
) -> None:
    note_id = await write(TITLE, CONTENT)
    await notes.delete(memory, note_id, actor="test")
    run = await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))
    assert run.result == {"skipped": "note_gone"}
    assert run.enqueued == []


async def test_a_malformed_payload_fails_for_good(
    db: Database, vocabulary: VocabularyService, local_backend: LocalEmbeddingBackend, memory: str
) -> None:
    job = make_job(memory, UUID(int=0), Tier.CPU, {"note_id": "not-a-uuid"})
    run = await run_handler(db, vocabulary, local_backend, job)
    assert (run.outcome.kind, run.outcome.failure_code) == ("failure", "invalid_payload")
    assert job.type == CONCEPT_TAGGING
