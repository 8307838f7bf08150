"""The cpu tier names dimensions with the real local model: phrases written apart from the
prototypes land in their dimension well above chance, head nouns decide the role, every
concept the tier proposes carries a dimension (reused ones without one are given one), and
the note's detected document type is its content_type concept."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fortemi.documents.service import DocumentTypeService
from fortemi.graph.tagging.content_type import DetectedContentTypes
from fortemi.graph.tagging.dimensions import EXEMPLARS, DimensionClassifier, head_cues
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Tier
from fortemi.platform.notes import NoteDraft, NoteService
from fortemi.retrieval.chunking import chunk_text
from tests.integration.graph.tagging.conftest import make_job, run_handler
from tests.integration.graph.tagging.test_cpu_tier import CONTENT, TITLE

# Written without looking at the classifier's answers; none is an exemplar.
HELD_OUT = {
    "domain": ["astronomy", "political science", "genetics", "statistics",
               "materials science", "pharmacology", "anthropology", "cognitive science"],
    "topic": ["antibiotic resistance", "remote work", "ocean acidification",
              "income inequality", "technical debt", "air pollution", "obesity",
              "misinformation"],
    "methodology": ["cross-sectional survey", "focus groups", "controlled experiment",
                    "cost-benefit analysis", "peer review", "mixed methods research",
                    "usability testing", "retrospective cohort"],
    "application": ["face recognition", "inventory management system", "weather forecasting",
                    "sentiment monitoring", "energy grid management", "precision medicine",
                    "voice assistant", "plagiarism detection"],
    "technique": ["convolutional neural network", "dynamic programming", "mass spectrometry",
                  "support vector machine", "bloom filter", "monte carlo sampling",
                  "quicksort", "word2vec"],
}  # fmt: skip


def test_held_out_phrases_are_not_prototypes() -> None:
    exemplars = {e.casefold() for examples in EXEMPLARS.values() for e in examples}
    assert not exemplars & {p.casefold() for ps in HELD_OUT.values() for p in ps}


def test_a_head_noun_names_the_role_of_its_phrase() -> None:
    assert head_cues("randomized double-blind trial") == ["methodology"]
    assert head_cues("credit card fraud detection") == ["application"]
    assert head_cues("spectral clustering") == ["technique"]
    assert head_cues("epidemiology") == ["domain"]
    assert head_cues("graph epidemiology") == []  # a suffix counts for one word only
    assert head_cues("sleep quality") == []


async def test_held_out_phrases_land_in_their_dimension_well_above_chance(
    local_backend: LocalEmbeddingBackend,
) -> None:
    classifier = DimensionClassifier(local_backend)
    right = 0
    per_dimension: dict[str, int] = {}
    for dimension, phrases in HELD_OUT.items():
        named = await classifier.classify(phrases, await local_backend.embed(phrases))
        hits = sum(got == dimension for got in named)
        per_dimension[dimension] = hits
        right += hits
    # 40 phrases, 5 dimensions: chance is 8. Measured 32 (without the domain floor 26,
    # with one topic of 8).
    assert right >= 30, per_dimension
    assert all(hits >= 5 for hits in per_dimension.values()), per_dimension


async def test_every_cpu_concept_has_a_dimension_and_they_span_several(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Any,
) -> None:
    note_id = await write(TITLE, CONTENT)
    await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))

    concepts = (await vocabulary.note_concepts(memory, [note_id]))[note_id]
    dimensions = {c.label.casefold(): c.dimension for c in concepts}
    assert None not in dimensions.values()
    assert len(set(dimensions.values())) >= 3
    assert dimensions["markdown"] == "content_type"
    assert dimensions["community detection"] == "application"  # its head: "detection"


async def test_a_reused_concept_without_a_dimension_is_given_one_and_one_with_keeps_it(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Any,
) -> None:
    other = await write("elsewhere", "another note")
    await vocabulary.tag_note(
        memory,
        other,
        [
            ConceptProposal(("PFNET",), None, 1.0, 1.0),
            ConceptProposal(("knowledge graph",), "domain", 1.0, 1.0),
        ],
        source="api",
        actor="test",
    )
    note_id = await write(TITLE, CONTENT)
    await run_handler(db, vocabulary, local_backend, make_job(memory, note_id, Tier.CPU))

    by_label = {c.label: c for c in (await vocabulary.note_concepts(memory, [other]))[other]}
    assert by_label["PFNET"].dimension is not None
    assert by_label["knowledge graph"].dimension == "domain"  # a person's choice stays


async def test_the_content_type_is_the_notes_detected_document_type(
    db: Database,
    vocabulary: VocabularyService,
    local_backend: LocalEmbeddingBackend,
    notes: NoteService,
    memory: str,
) -> None:
    code = '''def louvain(graph, resolution=1.0):
    """Group the graph's nodes into communities by greedy modularity moves."""
    communities = [{node} for node in graph]
    return communities
'''
    note = await notes.create(
        memory, NoteDraft(title="louvain.py", content=code, format="python"), actor="test"
    )
    types = DetectedContentTypes(DocumentTypeService(db, chunk_text))
    await run_handler(
        db, vocabulary, local_backend, make_job(memory, note.id, Tier.CPU), content_types=types
    )

    concepts = (await vocabulary.note_concepts(memory, [note.id]))[note.id]
    kinds = [c for c in concepts if c.dimension == "content_type"]
    assert [c.label for c in kinds] == ["Python"]
    assert not kinds[0].primary
    assert await _broader_label(db, memory, kinds[0].concept_id) == "source code"


async def _broader_label(db: Database, memory: str, concept_id: UUID) -> str | None:
    async with db.memory_transaction(memory) as conn:
        label: str | None = await conn.fetchval(
            "SELECT l.label FROM concept_relation r "
            "JOIN concept_label l ON l.concept_id = r.target_id AND l.kind = 'pref' "
            "WHERE r.kind = 'broader' AND r.source_id = $1",
            concept_id,
        )
    return label
