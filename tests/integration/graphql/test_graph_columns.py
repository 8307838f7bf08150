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
