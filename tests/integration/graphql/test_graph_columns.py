"""graph() hands its node and edge lists to the flat fast path as columns; forced onto
graphql-core's ordinary completion (which then iterates the columns as built objects), the
same documents must give the same answers, aliases, fragments, directives and
``__typename`` included."""

from __future__ import annotations

import random
from typing import Any

import pytest

from fortemi.graphql import schema as schema_module
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall
from tests.integration.graphql.test_graph_api import GRAPH, gid
from tests.support.traversal import Link, add_links, add_notes

DOCUMENTS = [
    GRAPH,
    """query($id: ID!, $skip: Boolean!) { graph(noteId: $id, depth: 3) {
         nodes { __typename key: id t: title depth @skip(if: $skip) community @include(if: $skip)
                 communityLabel label2: communityLabel }
         edges { __typename from: source to: target kind: edgeType score @include(if: $skip) }
       } }""",
    """fragment N on GraphNode { title communityConfidence }
       fragment E on GraphEdge { edgeType rank model embeddingSet }
       query($id: ID!) { graph(noteId: $id, depth: 3, maxEdgesPerNode: 2) {
         nodes { id ...N ... on GraphNode { updatedAt createdAt archived } }
         edges { ...E computedAt bidirectional } } }""",
    """query($id: ID!) { a: graph(noteId: $id, depth: 1) { nodes { __typename } }
                         b: graph(noteId: $id, depth: 3, maxNodes: 5) { edges { source } } }""",
]


@pytest.mark.parametrize("document", DOCUMENTS)
async def test_graph_columns_answer_what_ordinary_completion_answers(
    gql: GraphQLCall,
    runtime: Runtime,
    memory: str,
    monkeypatch: pytest.MonkeyPatch,
    document: str,
) -> None:
    ids = await add_notes(runtime.notes, memory, [f"note {i}" for i in range(12)])
    rng = random.Random(3)  # noqa: S311 - test data, not secrets
    links: dict[tuple[int, int, str], Link] = {}
    for _ in range(30):
        a, b = rng.sample(range(12), 2)
        kind = rng.choice(["semantic", "explicit", "wiki"])
        score = round(rng.uniform(0.0, 1.0), 3)
        links[(a, b, kind)] = Link(ids[a], ids[b], kind, score, rank=rng.randint(1, 5))
        if kind == "semantic":
            links[(b, a, kind)] = Link(ids[b], ids[a], kind, score)
    await add_links(runtime.db, memory, list(links.values()))
    variables: dict[str, Any] = {"id": gid(ids[0]), "skip": True}
    if document is GRAPH:
        variables = {"id": gid(ids[0]), "depth": 3}
    fast = await gql(document, variables)
    refused: list[bool] = []

    def refuse(*args: Any) -> None:
        refused.append(True)  # the fast path declines: graphql-core completes each object

    monkeypatch.setattr(schema_module, "complete_flat_list", refuse)
    ordinary = await gql(document, variables)
    assert refused
    assert "errors" not in fast, fast
    assert fast == ordinary
    nodes = [graph["nodes"] for graph in fast["data"].values() if graph.get("nodes") is not None]
    assert nodes
    assert all(len(found) > 1 for found in nodes)


async def test_graph_times_are_the_stored_times_isoformat_with_or_without_microseconds(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    # The walk sends its times as text (fortemi.platform.isotext); they must read exactly as
    # asyncpg's datetimes formatted by the DateTime scalar, microsecond 0 included.
    ids = await add_notes(runtime.notes, memory, [f"note {i}" for i in range(6)])
    await add_links(runtime.db, memory, [Link(ids[0], other, "explicit", 0.5) for other in ids[1:]])
    async with runtime.db.memory_transaction(memory) as conn:
        await conn.execute(
            "UPDATE note SET created_at = created_at - make_interval(days => n),"
            " updated_at = date_trunc('second', updated_at) + make_interval(secs => n / 10.0)"
            " FROM (SELECT id, row_number() OVER (ORDER BY id)::int AS n FROM note) AS o"
            " WHERE o.id = note.id"
        )
        await conn.execute(
            "UPDATE note SET created_at = date_trunc('second', created_at) WHERE id = $1", ids[1]
        )
        await conn.execute("UPDATE note_link SET computed_at = date_trunc('minute', computed_at)"
                           " WHERE target_id = $1", ids[2])  # fmt: skip
        notes = {
            gid(row["id"]): (row["created_at"].isoformat(), row["updated_at"].isoformat())
            for row in await conn.fetch("SELECT id, created_at, updated_at FROM note")
        }
        links = {
            (gid(row["source_id"]), gid(row["target_id"])): row["computed_at"].isoformat()
            for row in await conn.fetch("SELECT source_id, target_id, computed_at FROM note_link")
        }
    body = await gql(GRAPH, {"id": gid(ids[0]), "depth": 1})
    assert "errors" not in body, body
    graph = body["data"]["graph"]
    assert len(graph["nodes"]) == 6
    assert {n["id"]: (n["createdAt"], n["updatedAt"]) for n in graph["nodes"]} == notes
    assert {(e["source"], e["target"]): e["computedAt"] for e in graph["edges"]} == links
    # microsecond 0 has no fraction at all; the others keep all six digits
    assert "." not in notes[gid(ids[1])][0]
    assert "." not in links[(gid(ids[0]), gid(ids[2]))]
    assert all(len(text.split(".")[-1]) == 12 for text, _ in notes.values() if "." in text)
    assert sum("." in text for text, _ in notes.values()) >= 4
