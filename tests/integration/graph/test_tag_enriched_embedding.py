"""Tag-enriched embeddings: a note's concept paths in its composed text, a new embedding
set when the composition changes, search answering from the old set until the new one is
full, and vectors that follow the note's concepts."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID, uuid4

import blake3

from fortemi.graph.tagging.jobs import concept_tagging_type
from fortemi.graph.vocabulary import VocabularyService
from fortemi.graph.vocabulary.models import ConceptProposal
from fortemi.graph.vocabulary.paths import ConceptPaths
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Job, JobOutcome, JobSpec, JobType, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService
from fortemi.platform.settings import Settings
from fortemi.retrieval.backfill import embedding_backfill_type
from fortemi.retrieval.indexing import (
    EMBEDDING,
    EMBEDDING_BACKFILL,
    Chunking,
    EmbeddingEnqueuer,
    embedding_job_type,
    embedding_spec,
)
from fortemi.retrieval.search import Scope, SearchMode, SearchRequest, SearchService
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSet, EmbeddingSets
from fortemi.runtime import job_registry
from tests.integration.graph.conftest import Write, run_job

CHUNKING = Chunking(size=1000, overlap=100)


def _plain(db: Database, backend: LocalEmbeddingBackend) -> JobType:
    return embedding_job_type(db, backend, CHUNKING, tier=Tier.CPU)


def _enriched(db: Database, backend: LocalEmbeddingBackend) -> JobType:
    return embedding_job_type(db, backend, CHUNKING, tier=Tier.CPU, concepts=ConceptPaths())


async def _embed(job_type: JobType, memory: str, note_id: UUID) -> tuple[JobOutcome, list[JobSpec]]:
    enqueued: list[JobSpec] = []
    outcome = await run_job(job_type, memory, {"note_id": str(note_id)}, enqueued)
    assert outcome.kind == "success", outcome
    return outcome, enqueued


async def _tag(
    vocabulary: VocabularyService, memory: str, note_id: UUID, *paths: Sequence[str]
) -> None:
    proposals = [
        ConceptProposal(tuple(path), None, 0.9, 1.0 - i / 10, primary=i == 0)
        for i, path in enumerate(paths)
    ]
    await vocabulary.tag_note(memory, note_id, proposals, source="api", actor="test")


async def _stored(db: Database, memory: str, note_id: UUID, set_id: int) -> tuple[str, str]:
    """(chunk text, text hash in the set) of a one-chunk note."""
    async with db.memory_transaction(memory) as conn:
        row = await conn.fetchrow(
            "SELECT c.text, e.text_hash FROM chunk c JOIN chunk_embedding e ON e.chunk_id = c.id "
            "WHERE c.note_id = $1 AND e.set_id = $2",
            note_id,
            set_id,
        )
    assert row is not None
    return row["text"], row["text_hash"]


async def _sets(db: Database, memory: str) -> list[EmbeddingSet]:
    """The memory's sets, newest first."""
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch("SELECT model, dimension FROM embedding_set")
        assert len({(row["model"], row["dimension"]) for row in rows}) <= 1
        if not rows:
            return []
        return await EmbeddingSets().siblings(conn, rows[0]["model"], rows[0]["dimension"])


async def _semantic_notes(
    db: Database, backend: LocalEmbeddingBackend, memory: str, query: str, concepts: bool = True
) -> list[UUID]:
    """The notes semantic search returns, best first, from a search service made now (so
    no set is remembered from an earlier call)."""
    search = SearchService(db, backend, concepts=concepts)
    outcome = await search.search(
        [Scope(memory, None)], SearchRequest(query=query, mode=SearchMode.SEMANTIC, limit=20)
    )
    assert not outcome.degraded, outcome.degraded_reason
    return [hit.note_id for hit in outcome.hits]


async def test_concept_paths_show_the_hierarchy_primary_first_and_drop_concepts_on_most_notes(
    db: Database,
    memory: str,
    write: Write,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
) -> None:
    lens = await write("Lenses", "How a lens bends light to a focus.")
    await _tag(
        vocabulary,
        memory,
        lens,
        ["science", "physics", "optics", "lasers"],
        ["workshop notes"],
        ["glass"],
    )
    for i in range(8):
        other = await write(f"Note {i}", f"Something else entirely, number {i}.")
        await _tag(vocabulary, memory, other, ["workshop notes"])
    paths = ConceptPaths()
    async with db.memory_transaction(memory) as conn:
        # 9 live notes: too few for a share to mean anything, nothing is dropped.
        assert await paths.for_note(conn, lens) == [
            "physics > optics > lasers",  # the primary, its last three levels
            "workshop notes",
            "glass",
        ]
    await write("Untagged", "A tenth note without concepts.")
    async with db.memory_transaction(memory) as conn:
        # 9 of 10 notes carry "workshop notes": above 80 %, it is dropped.
        assert await paths.for_note(conn, lens) == ["physics > optics > lasers", "glass"]
    # The Embedding job embeds exactly that text (here the memory's first set: no backfill).
    _outcome, enqueued = await _embed(_enriched(db, local_backend), memory, lens)
    assert enqueued == []
    [enriched] = await _sets(db, memory)
    assert enriched.composition.include_concepts
    text, text_hash = await _stored(db, memory, lens, enriched.id)
    expected = DocumentComposition(include_concepts=True).document(
        "Lenses", text, [], ["physics > optics > lasers", "glass"]
    )
    assert "Concepts: physics > optics > lasers; glass" in expected
    assert text_hash == blake3.blake3(expected.encode()).hexdigest()


async def test_search_answers_from_the_old_set_until_the_new_one_is_full_then_switches(
    db: Database,
    memory: str,
    write: Write,
    notes: NoteService,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
) -> None:
    topics = [
        ("Sourdough", "Feeding a sourdough starter with rye flour and water."),
        ("Tides", "The moon's pull raises ocean tides twice a day."),
        ("Chess", "Opening principles: control the centre, develop knights."),
        ("Bees", "Honey bees dance to tell the hive where flowers are."),
    ]
    ids = [await write(title, content) for title, content in topics]
    plain = _plain(db, local_backend)
    for note_id in ids:
        await _embed(plain, memory, note_id)
    for note_id, (title, _) in zip(ids, topics, strict=True):
        await _tag(vocabulary, memory, note_id, [title.lower()])
    [old] = await _sets(db, memory)
    # The setting is on: no set of the new composition yet, search answers from the old.
    assert len(await _semantic_notes(db, local_backend, memory, "ocean and moon")) == 4

    enriched = _enriched(db, local_backend)
    outcome, enqueued = await _embed(enriched, memory, ids[0])
    new, _ = await _sets(db, memory)
    assert new.id != old.id
    assert new.composition.include_concepts
    # The run that made the set asked for its backfill, once per memory and set.
    assert [(s.type, s.payload, s.dedupe_key) for s in enqueued] == [
        (EMBEDDING_BACKFILL, {"set_id": new.id}, f"{EMBEDDING_BACKFILL}:{memory}:{new.id}")
    ]
    # The old set holds the note's current text already: nothing more to write there.
    assert outcome.result == {
        "chunks": 1,
        "embedded": 1,
        "serving": {"set": old.id, "embedded": 0},
    }
    # One note in the new set; search still answers from the old one, all four notes.
    assert len(await _semantic_notes(db, local_backend, memory, "ocean and moon")) == 4

    # An edit while the new set fills reaches both sets: the old one keeps answering for it.
    await notes.update(
        memory, ids[1], NotePatch(content="Volcanoes erupt molten lava and ash."), actor="test"
    )
    outcome, _ = await _embed(enriched, memory, ids[1])
    assert outcome.result == {
        "chunks": 1,
        "embedded": 1,
        "serving": {"set": old.id, "embedded": 1},
    }
    found = await _semantic_notes(db, local_backend, memory, "lava eruption")
    assert (len(found), found[0]) == (4, ids[1])

    # The backfill asks for every note the new set does not hold yet, no more.
    backfill_type = embedding_backfill_type(db, tier=Tier.CPU)
    enqueued = []
    outcome = await run_job(backfill_type, memory, {"set_id": new.id}, enqueued)
    assert outcome.result == {"notes": 2}
    assert sorted(str(s.payload["note_id"]) for s in enqueued) == sorted(map(str, ids[2:]))
    assert {s.dedupe_key for s in enqueued} == {f"{EMBEDDING}:{memory}:{n}" for n in ids[2:]}

    await _embed(enriched, memory, ids[2])
    assert len(await _semantic_notes(db, local_backend, memory, "chess openings")) == 4
    outcome, _ = await _embed(enriched, memory, ids[3])
    assert "serving" in (outcome.result or {})  # the last note of the backfill
    async with db.memory_transaction(memory) as conn:
        serving = await EmbeddingSets().serving(
            conn, memory, new.model, new.dimension, new.composition
        )
    assert serving is not None
    assert serving.id == new.id
    # Full: the new set answers. An edit now is written to the new set only, so the old
    # set loses the note (its chunks are replaced): search still finds all four.
    await notes.update(
        memory, ids[2], NotePatch(content="Endgames: king and pawn versus king."), actor="test"
    )
    # A worker asks again which set serves after a few seconds; a new one asks at once.
    outcome, _ = await _embed(_enriched(db, local_backend), memory, ids[2])
    assert outcome.result == {"chunks": 1, "embedded": 1}
    found = await _semantic_notes(db, local_backend, memory, "king and pawn endgame")
    assert (len(found), found[0]) == (4, ids[2])
    async with db.memory_transaction(memory) as conn:
        assert not await EmbeddingSets().complete(conn, old)

    # Turned off again: the plain set is the configured one but behind, so the enriched
    # set keeps answering (and keeps its concept paths), and the plain set is backfilled.
    off = embedding_job_type(
        db, local_backend, CHUNKING, tier=Tier.CPU, concepts=ConceptPaths(), enrich=False
    )
    await notes.update(memory, ids[2], NotePatch(content="Castling protects the king."), actor="t")
    outcome, enqueued = await _embed(off, memory, ids[2])
    assert [(s.type, s.payload) for s in enqueued] == [(EMBEDDING_BACKFILL, {"set_id": old.id})]
    assert outcome.result == {
        "chunks": 1,
        "embedded": 1,
        "serving": {"set": new.id, "embedded": 1},
    }
    text, text_hash = await _stored(db, memory, ids[2], new.id)
    composed = new.composition.document("Chess", text, [], ["chess"])
    assert text_hash == blake3.blake3(composed.encode()).hexdigest()
    # That write made the plain set whole again (only this note had changed): it answers.
    found = await _semantic_notes(db, local_backend, memory, "castling the king", concepts=False)
    assert (len(found), found[0]) == (4, ids[2])
    async with db.memory_transaction(memory) as conn:
        serving = await EmbeddingSets().serving(
            conn, memory, old.model, old.dimension, old.composition
        )
    assert serving == old


class _Recorded:
    """Dispatch that records the jobs it would send."""

    def __init__(self) -> None:
        self.sent: list[Job] = []

    async def __call__(self, jobs: Sequence[Job]) -> None:
        self.sent.extend(jobs)


async def test_retagging_a_note_re_embeds_it_with_its_new_concepts(
    db: Database,
    memory: str,
    write: Write,
    local_backend: LocalEmbeddingBackend,
) -> None:
    enriched = _enriched(db, local_backend)
    registry = JobRegistry()
    registry.register(enriched)
    dispatch = _Recorded()
    follower = EmbeddingEnqueuer(JobService(db, registry), dispatch, tier=Tier.CPU)
    vocabulary = VocabularyService(db, followers=[follower])
    note = await write("Lenses", "How a lens bends light to a focus.")
    await _embed(enriched, memory, note)
    [chosen] = await _sets(db, memory)
    _, before = await _stored(db, memory, note, chosen.id)

    await _tag(vocabulary, memory, note, ["physics", "optics"])
    # tagNoteConcepts' path: an Embedding job, written with the concepts, sent after commit.
    assert [(j.type, j.dedupe_key) for j in dispatch.sent] == [
        (EMBEDDING, f"{EMBEDDING}:{memory}:{note}")
    ]
    outcome, _ = await _embed(enriched, memory, note)
    assert outcome.result == {"chunks": 1, "embedded": 1}
    text, after = await _stored(db, memory, note, chosen.id)
    composed = chosen.composition.document("Lenses", text, [], ["physics > optics"])
    assert after != before
    assert after == blake3.blake3(composed.encode()).hexdigest()
    # The same concepts again: the text is unchanged, nothing is re-embedded.
    outcome, _ = await _embed(enriched, memory, note)
    assert outcome.result == {"chunks": 1, "embedded": 0}

    # untagNoteConcept too (its job is a new one once the first has run).
    async with db.memory_transaction(memory) as conn:
        await conn.execute(
            "UPDATE public.job SET status = 'completed', finished_at = now() WHERE id = $1",
            dispatch.sent[0].id,
        )
    [attached] = (await vocabulary.note_concepts(memory, [note]))[note]
    assert await vocabulary.untag_note(memory, note, attached.concept_id, actor="test")
    assert len(dispatch.sent) == 2
    assert dispatch.sent[1].type == EMBEDDING
    outcome, _ = await _embed(enriched, memory, note)
    assert outcome.result == {"chunks": 1, "embedded": 1}
    assert (await _stored(db, memory, note, chosen.id))[1] == before


async def test_the_tagging_job_enqueues_embedding_after_writing_concepts_when_asked(
    db: Database,
    memory: str,
    write: Write,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
) -> None:
    note = await write(
        "Hybrid search",
        "Hybrid search fuses BM25 lexical ranking with dense vector retrieval using "
        "reciprocal rank fusion over an HNSW index.",
    )

    def reembed(memory: str, note_id: UUID) -> list[JobSpec]:
        return [embedding_spec(memory, note_id, Tier.CPU)]

    for followups, expected in ((None, 0), (reembed, 1)):
        tagging = concept_tagging_type(db, vocabulary, local_backend, followups=followups)
        enqueued: list[JobSpec] = []
        outcome = await run_job(tagging, memory, {"note_id": str(note)}, enqueued)
        assert outcome.kind == "success", outcome
        embedding = [s for s in enqueued if s.type == EMBEDDING]
        assert len(embedding) == expected
        assert all(s.dedupe_key == f"{EMBEDDING}:{memory}:{note}" for s in embedding)


async def test_the_worker_registry_embeds_concepts_only_when_the_setting_is_on(
    db: Database,
    settings: Settings,
    notes: NoteService,
    vocabulary: VocabularyService,
    memory_service: MemoryService,
    local_backend: LocalEmbeddingBackend,
) -> None:
    for on in (False, True):
        registry = job_registry(
            settings.model_copy(update={"embed_concepts": on}), backend=local_backend
        )(db)
        assert EMBEDDING_BACKFILL in registry
        memory = f"enriched_{int(on)}_{uuid4().hex[:8]}"
        await memory_service.create(memory, created_by="test")
        try:
            draft = NoteDraft(title="Lenses", content="How a lens bends light.")
            note = (await notes.create(memory, draft, actor="test")).id
            await _tag(vocabulary, memory, note, ["physics", "optics"])
            await _embed(registry.get(EMBEDDING), memory, note)
            [chosen] = await _sets(db, memory)
            assert chosen.composition.include_concepts is on
            text, text_hash = await _stored(db, memory, note, chosen.id)
            concepts = ["physics > optics"] if on else []
            composed = chosen.composition.document("Lenses", text, [], concepts)
            assert text_hash == blake3.blake3(composed.encode()).hexdigest()
        finally:
            await memory_service.delete(memory, confirm=memory)
