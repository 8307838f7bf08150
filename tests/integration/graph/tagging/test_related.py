"""RelatedConceptInference on the real vocabulary: edges only across dimensions, weighted
by NPMI over the memory's notes, nothing for notes with fewer than three concepts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from fortemi.graph.tagging.related import (
    RELATED_CONCEPT_INFERENCE,
    related_concept_inference_type,
    related_confidence,
)
from fortemi.graph.vocabulary import ConceptProposal, VocabularyService
from fortemi.platform.database import Database
from fortemi.platform.events import Event
from fortemi.platform.jobs.models import HandlerContext, Job, JobOutcome, JobStatus, Tier


async def _run(
    db: Database, vocabulary: VocabularyService, memory: str, note_id: UUID
) -> JobOutcome:
    now = datetime.now(UTC)
    job = Job(
        id=uuid4(), memory=memory, type=RELATED_CONCEPT_INFERENCE, tier=Tier.CPU, priority=2,
        status=JobStatus.RUNNING, payload={"note_id": str(note_id)}, attempts=1,
        max_attempts=5, next_attempt_at=now, progress=0, progress_message=None,
        failure_class=None, failure_code=None, result=None, dedupe_key=None,
        requested_by=None, created_at=now, started_at=now, finished_at=None,
    )  # fmt: skip

    async def refuse(*_: Any, **__: Any) -> Job:
        raise AssertionError("related-concept inference enqueues nothing")

    async def progress(percent: int, message: str | None) -> None:
        return None

    async def publish(event: Event) -> None:
        return None

    context = HandlerContext(
        job=job, report_progress=progress, enqueue=refuse, escalate=refuse, publish=publish
    )
    return await related_concept_inference_type(db, vocabulary).handler(context)


def _p(label: str, dimension: str | None) -> ConceptProposal:
    return ConceptProposal((label,), dimension, 0.9, 0.9)


async def _tag(
    vocabulary: VocabularyService, memory: str, write: Any, *pairs: tuple[str, str | None]
) -> UUID:
    note_id: UUID = await write("note", "text")
    await vocabulary.tag_note(
        memory, note_id, [_p(label, dim) for label, dim in pairs], source="api", actor="t"
    )
    return note_id


async def _edges(db: Database, memory: str) -> dict[tuple[str, str], tuple[float, str]]:
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT ls.label AS a, lt.label AS b, r.confidence, r.created_by "
            "FROM concept_relation r "
            "JOIN concept_label ls ON ls.concept_id = r.source_id AND ls.kind = 'pref' "
            "JOIN concept_label lt ON lt.concept_id = r.target_id AND lt.kind = 'pref' "
            "WHERE r.kind = 'related'"
        )
    return {(r["a"], r["b"]): (round(r["confidence"], 4), r["created_by"]) for r in rows}


async def test_related_edges_join_concepts_of_different_dimensions_weighted_by_npmi(
    db: Database, vocabulary: VocabularyService, memory: str, write: Any
) -> None:
    # "graphs" and "louvain" meet on 2 of 4 notes; "graphs" is on 3, "louvain" on 2.
    note = await _tag(vocabulary, memory, write,
                      ("graphs", "domain"), ("louvain", "technique"), ("networks", "domain"))  # fmt: skip
    await _tag(vocabulary, memory, write, ("graphs", "domain"), ("louvain", "technique"))
    await _tag(vocabulary, memory, write, ("graphs", "domain"), ("cooking", "topic"))
    await _tag(vocabulary, memory, write, ("cooking", "topic"))

    outcome = await _run(db, vocabulary, memory, note)

    assert outcome.result == {"pairs": 2, "related": 2, "new": 2}
    edges = await _edges(db, memory)
    expected = round(related_confidence(2, 3, 2, 4), 4)
    assert edges[("graphs", "louvain")] == (expected, RELATED_CONCEPT_INFERENCE)
    assert edges[("louvain", "graphs")] == edges[("graphs", "louvain")]  # both directions
    assert ("louvain", "networks") in edges
    assert ("graphs", "networks") not in edges  # one dimension: no edge


async def test_pairs_below_the_floor_get_no_edge(
    db: Database, vocabulary: VocabularyService, memory: str, write: Any
) -> None:
    # "graphs" is everywhere, so meeting "louvain" says nothing: NPMI 0.
    note = await _tag(vocabulary, memory, write,
                      ("graphs", "domain"), ("louvain", "technique"), ("modularity", "topic"))  # fmt: skip
    for _ in range(3):
        await _tag(vocabulary, memory, write, ("graphs", "domain"), ("other", None))
    outcome = await _run(db, vocabulary, memory, note)

    edges = await _edges(db, memory)
    assert ("graphs", "louvain") not in edges
    assert ("louvain", "modularity") in edges
    assert outcome.result is not None
    assert outcome.result["related"] == 1


async def test_a_note_with_fewer_than_three_concepts_is_skipped(
    db: Database, vocabulary: VocabularyService, memory: str, write: Any
) -> None:
    note = await _tag(vocabulary, memory, write, ("graphs", "domain"), ("louvain", "technique"))
    outcome = await _run(db, vocabulary, memory, note)
    assert outcome.result == {"skipped": "too_few_concepts", "concepts": 2}
    assert await _edges(db, memory) == {}


async def test_concepts_without_a_dimension_take_no_part(
    db: Database, vocabulary: VocabularyService, memory: str, write: Any
) -> None:
    note = await _tag(vocabulary, memory, write, ("a", None), ("b", None), ("c", "topic"))
    outcome = await _run(db, vocabulary, memory, note)
    assert outcome.result == {"pairs": 0, "related": 0, "new": 0}
