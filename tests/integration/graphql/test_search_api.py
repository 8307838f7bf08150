"""search through GraphQL: ranked by BM25, scoped to what the caller may read, across
memories, explained, and honest about a missing semantic leg."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.retrieval.repository import NewChunk, RetrievalRepository
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes, open_memory

SEARCH = """query($q: String!, $mode: SearchMode, $limit: Int, $explain: Boolean,
                  $memories: [String!], $filter: SearchFilter, $alpha: Float, $ef: Int) {
  search(query: $q, mode: $mode, limit: $limit, explain: $explain, memories: $memories,
         filter: $filter, alpha: $alpha, efSearch: $ef) {
    hits { note { id title } memory score chunk
           explain { lexicalRank lexicalScore semanticRank semanticScore fusedScore } }
    degraded degradedReason tookMs
  }
}"""


async def _note(gql: GraphQLCall, title: str, content: str, **extra: Any) -> str:
    body = await gql(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": {"title": title, "content": content, **extra.pop("input", {})}},
        **extra,
    )
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


async def _search(gql: GraphQLCall, query: str, **variables: Any) -> dict[str, Any]:
    call: dict[str, Any] = {k: variables.pop(k) for k in ("token", "memory") if k in variables}
    body = await gql(SEARCH, {"q": query, **variables}, **call)
    assert "errors" not in body, body
    results: dict[str, Any] = body["data"]["search"]
    return results


async def test_lexical_search_ranks_by_bm25_and_explains_each_hit(gql: GraphQLCall) -> None:
    best = await _note(gql, "Pod crash loops", "A pod in CrashLoopBackOff keeps crashing.")
    other = await _note(gql, "Networking", "Services route to a pod by labels.")
    await _note(gql, "Cooking", "Beans and peas.")
    found = await _search(gql, "crashing pod", mode="LEXICAL", explain=True)
    assert [h["note"]["id"] for h in found["hits"]] == [best, other]
    first = found["hits"][0]
    assert first["explain"]["lexicalRank"] == 1
    assert first["explain"]["lexicalScore"] == pytest.approx(first["score"])
    assert first["explain"]["semanticRank"] is None
    assert found["degraded"] is False
    assert found["tookMs"] >= 0


async def test_hybrid_without_embeddings_answers_lexically_and_says_it_is_degraded(
    gql: GraphQLCall,
) -> None:
    note = await _note(gql, "Lone", "a solitary observation")
    found = await _search(gql, "solitary")
    assert [h["note"]["id"] for h in found["hits"]] == [note]
    assert found["degraded"] is True
    assert found["degradedReason"]


async def test_notes_in_projects_the_caller_may_not_read_never_surface(
    gql: GraphQLCall, issuer: LocalIssuer
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    hidden = await _note(gql, "Poimen runbook", "secret rotation steps", token=dana,
                         input={"project": "poimen"})  # fmt: skip
    visible = await _note(gql, "Open runbook", "rotation steps for everyone")
    as_alice = await _search(gql, "rotation", mode="LEXICAL")
    assert [h["note"]["id"] for h in as_alice["hits"]] == [visible]
    as_dana = await _search(gql, "rotation", mode="LEXICAL", token=dana)
    assert hidden in {h["note"]["id"] for h in as_dana["hits"]}


@pytest.fixture
async def second_memory(runtime: Runtime) -> AsyncIterator[str]:
    name = await open_memory(runtime)
    yield name
    await runtime.memories.delete(name, confirm=name)


@pytest.fixture
async def closed_memory(runtime: Runtime) -> AsyncIterator[str]:
    """A memory with no policy of its own: default deny."""
    name = f"closed_{uuid.uuid4().hex[:12]}"
    await runtime.memories.create(name, created_by="test")
    yield name
    await runtime.memories.delete(name, confirm=name)


async def test_federated_search_fuses_memories_the_caller_may_read_and_finds_no_others(
    gql: GraphQLCall, memory: str, second_memory: str, closed_memory: str
) -> None:
    here = await _note(gql, "Here", "glacier melt measurements")
    there = await _note(gql, "There", "glacier melt glacier", memory=second_memory)
    found = await _search(gql, "glacier", mode="LEXICAL", memories=[memory, second_memory])
    assert {(h["memory"], h["note"]["id"]) for h in found["hits"]} == {
        (memory, here),
        (second_memory, there),
    }
    scores = [h["score"] for h in found["hits"]]
    assert scores == sorted(scores, reverse=True)
    # A memory the caller may not read is answered as one that does not exist.
    refused = await gql(SEARCH, {"q": "glacier", "memories": [memory, closed_memory]})
    assert error_codes(refused) == ["NOT_FOUND"]
    unknown = await gql(SEARCH, {"q": "glacier", "memories": ["no_such_memory"]})
    assert error_codes(unknown) == ["NOT_FOUND"]


@pytest.mark.parametrize(
    "variables",
    [{"limit": 0}, {"limit": 101}, {"alpha": 1.5}, {"ef": 5}, {"q": '-"only excluded"'}],
)
async def test_out_of_range_arguments_are_bad_user_input(
    gql: GraphQLCall, variables: dict[str, Any]
) -> None:
    body = await gql(SEARCH, {"q": "anything", **variables})
    assert error_codes(body) == ["BAD_USER_INPUT"]


async def test_index_status_counts_notes_and_what_is_embedded(gql: GraphQLCall) -> None:
    await _note(gql, "One", "first")
    await _note(gql, "Two", "second")
    body = await gql(
        "{ searchIndexStatus { notes chunks embeddedChunks pendingEmbeddingJobs model } }"
    )
    status = body["data"]["searchIndexStatus"]
    assert status["notes"] == 2
    assert status["embeddedChunks"] <= status["chunks"]


async def test_a_search_records_its_read_check_and_read_scope_in_one_audit_commit(
    gql: GraphQLCall, issuer: LocalIssuer, runtime: Runtime, memory: str, closed_memory: str
) -> None:
    user = f"auditee-{uuid.uuid4().hex[:8]}"
    token = issuer.mint(user, groups=["platform-team"], roles=["editor"])
    await _search(gql, "anything", mode="LEXICAL", token=token)
    refused = await gql(SEARCH, {"q": "anything", "memories": [closed_memory]}, token=token)
    assert error_codes(refused) == ["NOT_FOUND"]
    async with runtime.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT memory, decision, reason, xmin::text AS tx FROM public.rbac_audit_log "
            "WHERE user_id = $1 ORDER BY segment, seq",
            user,
        )
    allowed, scope, denied = rows
    assert (allowed["memory"], allowed["decision"]) == (memory, "allow")
    assert (scope["memory"], scope["reason"]) == (memory, "read_scope")
    assert allowed["tx"] == scope["tx"]  # written by one statement, in one transaction
    assert (denied["memory"], denied["decision"]) == (closed_memory, "deny")


async def test_search_takes_the_segment_path_once_built_and_sees_a_note_written_after_it(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    await _note(gql, "Kettles", "A copper kettle whistles on the stove.")
    await _note(gql, "Harbors", "Boats rest in the harbor at night.")
    assert await runtime.services.search.segments.ready(memory) is not None
    later = await _note(gql, "More kettles", "Kettle, kettle, copper kettle.")
    body = await gql(
        """query($q: String!) { search(query: $q, mode: LEXICAL, explain: true) {
             hits { note { id } } lexical { path postingsRead postingsTotal } } }""",
        {"q": "copper kettle"},
    )
    assert "errors" not in body, body
    found = body["data"]["search"]
    assert found["lexical"]["path"] == "segment"
    assert found["lexical"]["postingsTotal"] == 4  # copper 2, kettle 2: the later note too
    assert found["hits"][0]["note"]["id"] == later


async def test_a_hit_chunk_selected_through_a_fragment_is_still_answered(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    text = "A lantern lights the path."
    await _note(gql, "Lanterns", text)
    async with runtime.db.memory_transaction(memory) as conn:  # as the Embedding job cuts it
        note = await conn.fetchval("SELECT id FROM note WHERE title = 'Lanterns'")
        await RetrievalRepository().replace_chunks(
            conn, note, "h", [NewChunk(0, text, 0, len(text), None)]
        )
    body = await gql(
        """query($q: String!) { search(query: $q, mode: LEXICAL) { ...Found } }
           fragment Found on SearchResults { hits { ... on SearchHit { score chunk } } }""",
        {"q": "lantern"},
    )
    assert "errors" not in body, body
    assert [h["chunk"] for h in body["data"]["search"]["hits"]] == [text]
