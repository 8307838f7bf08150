"""With ``FORTEMI_EMBED_CONCEPTS`` on, tagging a note through GraphQL enqueues its
``Embedding`` job (the vectors follow the concepts); off (the default), it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from fortemi.app import create_app
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes import NoteDraft
from fortemi.platform.settings import Settings
from fortemi.retrieval.indexing import EMBEDDING
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import open_memory

TAG = """mutation($n: ID!, $c: [NoteConceptInput!]!) {
  tagNoteConcepts(note: $n, concepts: $c) { label }
}"""
UNTAG = "mutation($n: ID!, $c: ID!) { untagNoteConcept(note: $n, concept: $c) }"


@pytest.fixture
async def enriched(settings: Settings, service_urls: ServiceUrls) -> AsyncIterator[Runtime]:
    """A second runtime on the same servers, with tag-enriched embeddings on."""
    rt = await Runtime.open(settings.model_copy(update={"embed_concepts": True}), service_urls)
    yield rt
    await rt.close()


async def _call(runtime: Runtime, memory: str, query: str, variables: dict[str, Any]) -> Any:
    assert runtime.issuer is not None
    token = runtime.issuer.mint("alice", groups=["data-team"], roles=["editor"])
    transport = httpx.ASGITransport(app=create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
        )
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


async def _pending(runtime: Runtime, key: str) -> int:
    return int(
        await runtime.db.fetchval(
            "SELECT count(*) FROM public.job WHERE dedupe_key = $1 AND status = 'pending'", key
        )
    )


async def _finish(runtime: Runtime, key: str) -> None:
    """Mark the pending job as run (no worker runs here), so a new one can be enqueued."""
    await runtime.db.fetchval(
        "WITH done AS (UPDATE public.job SET status = 'completed', "
        "finished_at = clock_timestamp() WHERE dedupe_key = $1 AND status = 'pending' "
        "RETURNING 1) SELECT count(*) FROM done",
        key,
    )


async def _embedding_jobs_after_tagging(runtime: Runtime) -> tuple[int, int]:
    """(Embedding jobs pending after tagNoteConcepts, after untagNoteConcept) for a note
    whose own Embedding job has run."""
    memory = await open_memory(runtime)
    try:
        note = await runtime.notes.create(
            memory, NoteDraft(title="Lenses", content="How a lens bends light."), actor="test"
        )
        key = f"{EMBEDDING}:{memory}:{note.id}"
        assert await _pending(runtime, key) == 1  # the note's own, from its creation
        await _finish(runtime, key)
        node = to_global_id("Note", note.id)
        await _call(runtime, memory, TAG, {"n": node, "c": [{"path": "physics/optics"}]})
        tagged = await _pending(runtime, key)
        await _finish(runtime, key)
        [concept] = (await runtime.services.vocabulary.note_concepts(memory, [note.id]))[note.id]
        removed = await _call(
            runtime, memory, UNTAG, {"n": node, "c": to_global_id("Concept", concept.concept_id)}
        )
        assert removed == {"untagNoteConcept": True}
        return tagged, await _pending(runtime, key)
    finally:
        await runtime.memories.delete(memory, confirm=memory)


async def test_tagging_through_graphql_enqueues_embedding_only_with_enriched_embeddings_on(
    runtime: Runtime, enriched: Runtime
) -> None:
    assert runtime.settings.embed_concepts is False
    assert await _embedding_jobs_after_tagging(runtime) == (0, 0)
    assert await _embedding_jobs_after_tagging(enriched) == (1, 1)
