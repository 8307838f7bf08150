"""graph(noteId ...) through GraphQL: the traversal contract over real note_link rows."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID, uuid4

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.errors import Unavailable
from fortemi.platform.ids import parse_note_id, to_global_id
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes
from tests.support.traversal import Link, add_links, add_notes

GRAPH = """query($id: ID!, $depth: Int, $maxNodes: Int, $minScore: Float, $k: Int) {
  graph(noteId: $id, depth: $depth, maxNodes: $maxNodes, minScore: $minScore,
        maxEdgesPerNode: $k) {
    graphVersion
    nodes { id title depth archived createdAt updatedAt community communityLabel
            communityConfidence }
    edges { source target edgeType score rank embeddingSet model computedAt bidirectional }
    meta { totalNodes totalEdges truncatedNodes truncatedEdges totalsExact
           parameters { depth maxNodes minScore maxEdgesPerNode }
           clamped truncationReasons }
  }
}"""


def gid(note_id: UUID) -> str:
    return to_global_id("Note", note_id)


async def _graph(gql: GraphQLCall, start: UUID | str, **variables: Any) -> dict[str, Any]:
    token = {"token": variables.pop("token")} if "token" in variables else {}
    start_id = start if isinstance(start, str) else gid(start)
    body = await gql(GRAPH, {"id": start_id, **variables}, **token)
    assert "errors" not in body, body
    graph: dict[str, Any] = body["data"]["graph"]
    return graph


def _titles(graph: dict[str, Any]) -> list[str]:
    return [node["title"] for node in graph["nodes"]]


async def test_graph_walks_links_both_ways_in_bfs_order_by_depth_then_score(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b, c, d, e = await add_notes(runtime.notes, memory, ["a", "b", "c", "d", "e"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(a, b, "explicit", 0.4),
            Link(c, a, "wiki", 0.9),  # incoming: followed the other way
            Link(b, d, "explicit", 0.5),
            Link(d, e, "explicit", 0.5),  # depth 3: beyond the default depth 2
        ],
    )
    graph = await _graph(gql, a)
    assert graph["graphVersion"] == "v1"
    assert _titles(graph) == ["a", "c", "b", "d"]
    assert [n["depth"] for n in graph["nodes"]] == [0, 1, 1, 2]
    edges = {
        (x["source"], x["target"], x["edgeType"], round(x["score"], 6)) for x in graph["edges"]
    }
    assert edges == {
        (gid(a), gid(b), "EXPLICIT", 0.4),
        (gid(c), gid(a), "WIKI", 0.9),
        (gid(b), gid(d), "EXPLICIT", 0.5),
    }
    meta = graph["meta"]
    assert meta["totalNodes"] == 4
    assert meta["truncatedNodes"] == 0
    assert meta["totalsExact"] is True
    assert meta["truncationReasons"] == []
    assert meta["parameters"] == {"depth": 2, "maxNodes": 50, "minScore": 0.0,
                                  "maxEdgesPerNode": None}  # fmt: skip


async def test_depth_zero_returns_the_start_alone(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b = await add_notes(runtime.notes, memory, ["a", "b"])
    await add_links(runtime.db, memory, [Link(a, b, "explicit", 1.0)])
    graph = await _graph(gql, a, depth=0)
    assert _titles(graph) == ["a"]
    assert graph["edges"] == []
    assert graph["nodes"][0]["depth"] == 0
    assert graph["meta"]["totalNodes"] == 1


async def test_out_of_range_values_are_clamped_and_reported_not_rejected(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    (a,) = await add_notes(runtime.notes, memory, ["a"])
    graph = await _graph(gql, a, depth=50, maxNodes=0, minScore=2.5, k=5000)
    assert graph["meta"]["parameters"] == {
        "depth": 10,
        "maxNodes": 1,
        "minScore": 1.0,
        "maxEdgesPerNode": 1000,
    }
    assert graph["meta"]["clamped"] == [
        "depth: 50 is above the maximum 10; 10 used",
        "maxNodes: 0 is below the minimum 1; 1 used",
        "minScore: 2.5 is above the maximum 1.0; 1.0 used",
        "maxEdgesPerNode: 5000 is above the maximum 1000; 1000 used",
    ]
    low = await _graph(gql, a, depth=-3, minScore=-1, k=0)
    assert low["meta"]["parameters"]["depth"] == 0
    assert low["meta"]["parameters"]["minScore"] == 0.0
    assert low["meta"]["parameters"]["maxEdgesPerNode"] == 1
    assert len(low["meta"]["clamped"]) == 3


async def test_non_numbers_are_bad_user_input(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    (a,) = await add_notes(runtime.notes, memory, ["a"])
    for variables in ({"depth": "two"}, {"maxNodes": 1.5}, {"minScore": "high"}, {"k": True}):
        body = await gql(GRAPH, {"id": gid(a), **variables})
        assert error_codes(body) == ["BAD_USER_INPUT"], (variables, body)
        assert body["data"] is None


async def test_unknown_deleted_and_unreadable_starts_are_all_not_found(
    gql: GraphQLCall, runtime: Runtime, memory: str, issuer: LocalIssuer
) -> None:
    (gone,) = await add_notes(runtime.notes, memory, ["gone"])
    await runtime.notes.delete(memory, gone, actor="test")
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    hidden = await gql(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": {"title": "hidden", "content": "x", "project": "poimen"}},
        token=dana,
    )
    hidden_id = hidden["data"]["createNote"]["id"]
    answers = []
    for start in (gid(uuid4()), gid(gone), hidden_id):
        body = await gql(GRAPH, {"id": start})
        assert error_codes(body) == ["NOT_FOUND"], body
        answers.append(body["errors"][0]["message"].split(" in ")[1])
    # The same words whether the note is missing or hidden: nothing to probe.
    assert len(set(answers)) == 1
    # Its owner's team reads it.
    assert _titles(await _graph(gql, hidden_id, token=dana)) == ["hidden"]


async def test_unreadable_notes_are_neither_shown_walked_through_nor_counted(
    gql: GraphQLCall, runtime: Runtime, memory: str, issuer: LocalIssuer
) -> None:
    a, b, c = await add_notes(runtime.notes, memory, ["a", "b", "c"])
    hidden = await add_notes(runtime.notes, memory, ["hidden"], project="poimen")
    behind = await add_notes(runtime.notes, memory, ["behind"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(a, b, "explicit", 0.5),
            Link(a, hidden[0], "explicit", 1.0),
            Link(hidden[0], behind[0], "explicit", 1.0),  # reachable only through hidden
            Link(b, c, "explicit", 0.5),
        ],
    )
    graph = await _graph(gql, a)
    assert _titles(graph) == ["a", "b", "c"]
    assert graph["meta"]["totalNodes"] == 3
    assert graph["meta"]["totalEdges"] == 2
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    as_dana = await _graph(gql, a, token=dana)
    assert _titles(as_dana) == ["a", "hidden", "b", "behind", "c"]


async def test_pruned_semantic_links_are_not_traversed_but_explicit_and_wiki_always_are(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b, c, d, e = await add_notes(runtime.notes, memory, ["a", "b", "c", "d", "e"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(a, b, "semantic", 0.9),
            Link(b, a, "semantic", 0.9),
            Link(a, c, "semantic", 0.8, pruned=True),
            Link(c, a, "semantic", 0.8, pruned=True),
            # Maintenance prunes only semantic links; a flag on the others changes nothing.
            Link(a, d, "explicit", 0.2, pruned=True),
            Link(e, a, "wiki", 0.0),
        ],
    )
    graph = await _graph(gql, a, depth=1)
    assert set(_titles(graph)) == {"a", "b", "d", "e"}
    kinds = sorted(x["edgeType"] for x in graph["edges"])
    assert kinds == ["EXPLICIT", "SEMANTIC", "WIKI"]
    # A semantic pair written both ways is one bidirectional edge.
    semantic = next(x for x in graph["edges"] if x["edgeType"] == "SEMANTIC")
    assert semantic["bidirectional"] is True
    # Equal scores both ways: reported from the smaller id.
    assert semantic["source"] == gid(min(a, b))


async def test_deleted_notes_are_never_nodes(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b, c = await add_notes(runtime.notes, memory, ["a", "b", "c"])
    await add_links(runtime.db, memory, [Link(a, b, "explicit", 1.0), Link(b, c, "explicit", 1.0)])
    await runtime.notes.delete(memory, b, actor="test")
    graph = await _graph(gql, a)
    assert _titles(graph) == ["a"]
    assert graph["meta"]["totalNodes"] == 1


async def test_semantic_scores_are_min_max_normalised_and_min_score_applies_after(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b, c, d, e = await add_notes(runtime.notes, memory, ["a", "b", "c", "d", "e"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(a, b, "semantic", 0.70),
            Link(a, c, "semantic", 0.80),
            Link(a, d, "semantic", 0.90),
            Link(a, e, "explicit", 0.30),  # explicit keeps its score
        ],
    )
    graph = await _graph(gql, a, depth=1)
    by_target = {x["target"]: x["score"] for x in graph["edges"]}
    assert by_target == {
        gid(b): pytest.approx(0.0, abs=1e-6),
        gid(c): pytest.approx(0.5, abs=1e-6),
        gid(d): pytest.approx(1.0, abs=1e-6),
        gid(e): pytest.approx(0.3, abs=1e-6),
    }
    # Order at a level: the strongest link first.
    assert _titles(graph) == ["a", "d", "c", "e", "b"]
    filtered = await _graph(gql, a, depth=1, minScore=0.4)
    assert _titles(filtered) == ["a", "d", "c"]


async def test_max_nodes_truncation_is_stable_and_explained(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    ids = await add_notes(runtime.notes, memory, ["hub", "n1", "n2", "n3", "n4", "n5", "n6"])
    hub, leaves = ids[0], ids[1:]
    # Equal scores: the id breaks the tie, so the same three come back every time.
    links = [Link(hub, leaf, "explicit", 0.5) for leaf in leaves]
    await add_links(runtime.db, memory, [*links, Link(leaves[0], leaves[1], "explicit", 0.5)])
    first = await _graph(gql, hub, maxNodes=4)
    again = await _graph(gql, hub, maxNodes=4)
    assert first["nodes"] == again["nodes"]
    kept = [gid(x) for x in sorted(leaves)[:3]]
    assert [n["id"] for n in first["nodes"]] == [gid(hub), *kept]
    meta = first["meta"]
    assert meta["totalNodes"] == 7
    assert meta["truncatedNodes"] == 3
    assert meta["totalsExact"] is False  # the walk stopped at depth 1 of 2
    assert meta["truncationReasons"] == [
        "max_nodes limit: 4 of at least 7 nodes returned (the walk stopped at depth 1 of 2)"
    ]
    exact = await _graph(gql, hub, maxNodes=4, depth=1)
    assert exact["meta"]["truncationReasons"] == ["max_nodes limit: 4 of 7 nodes returned"]
    assert exact["meta"]["totalsExact"] is True


async def test_max_edges_per_node_follows_each_nodes_strongest_neighbours(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    hub, x, y, z = await add_notes(runtime.notes, memory, ["hub", "x", "y", "z"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(hub, x, "explicit", 0.9),
            Link(hub, y, "explicit", 0.8),
            Link(hub, z, "explicit", 0.1),
            Link(x, y, "explicit", 0.2),
        ],
    )
    graph = await _graph(gql, hub, k=2)
    assert _titles(graph) == ["hub", "x", "y"]
    pairs = {(e["source"], e["target"]) for e in graph["edges"]}
    # x-y is in the top 2 of both x and y.
    assert pairs == {(gid(hub), gid(x)), (gid(hub), gid(y)), (gid(x), gid(y))}
    unbounded = await _graph(gql, hub)
    assert _titles(unbounded) == ["hub", "x", "y", "z"]


async def test_communities_are_computed_on_the_returned_sub_graph(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a1, a2, a3, b1, b2, b3 = await add_notes(
        runtime.notes, memory, ["a1", "a2", "a3", "b1", "b2", "b3"]
    )
    strong = [(a1, a2), (a2, a3), (a1, a3), (b1, b2), (b2, b3), (b1, b3)]
    links = [Link(s, t, "explicit", 1.0) for s, t in strong]
    await add_links(runtime.db, memory, [*links, Link(a1, b1, "explicit", 0.05)])
    graph = await _graph(gql, a1, depth=3)
    community = {n["title"]: n["community"] for n in graph["nodes"]}
    assert community["a1"] == community["a2"] == community["a3"]
    assert community["b1"] == community["b2"] == community["b3"]
    assert community["a1"] != community["b1"]
    confidence = {n["title"]: n["communityConfidence"] for n in graph["nodes"]}
    assert confidence["a2"] == pytest.approx(1.0)
    assert confidence["a1"] == pytest.approx(2.0 / 2.05)
    # Cut at one triangle, the sub-graph is one community.
    small = await _graph(gql, a2, depth=1)
    assert {n["community"] for n in small["nodes"]} == {0}


async def test_links_outside_either_ends_strongest_are_dropped_and_explained(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b, c, e, f = await add_notes(runtime.notes, memory, ["a", "b", "c", "e", "f"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(a, b, "explicit", 0.9),
            Link(a, c, "explicit", 0.8),
            Link(b, e, "explicit", 0.85),
            Link(c, f, "explicit", 0.85),
            Link(b, c, "explicit", 0.1),  # neither b's nor c's two strongest
        ],
    )
    graph = await _graph(gql, a, k=2)
    titles = _titles(graph)
    assert titles[:3] == ["a", "b", "c"]
    assert sorted(titles[3:]) == ["e", "f"]  # equal scores: their ids order them
    pairs = {frozenset((x["source"], x["target"])) for x in graph["edges"]}
    assert frozenset((gid(b), gid(c))) not in pairs
    assert len(pairs) == 4
    meta = graph["meta"]
    assert (meta["totalEdges"], meta["truncatedEdges"]) == (5, 1)
    assert meta["truncationReasons"] == [
        "max_edges_per_node limit: 4 of 5 edges among the returned nodes kept "
        "(each node's 2 strongest neighbours)"
    ]


async def test_communities_are_computed_only_when_a_community_field_is_selected(
    gql: GraphQLCall, runtime: Runtime, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = await add_notes(runtime.notes, memory, ["a", "b"])
    await add_links(runtime.db, memory, [Link(a, b, "explicit", 1.0)])
    traversal = runtime.services.traversal
    asked: list[tuple[bool, bool]] = []
    real = traversal.columns  # what graph() asks the service for

    async def spy(*args: Any, communities: bool = True, labels: bool = True, **kw: Any) -> Any:
        asked.append((communities, labels))
        return await real(*args, communities=communities, labels=labels, **kw)

    monkeypatch.setattr(traversal, "columns", spy)
    plain = await gql("query($id: ID!) { graph(noteId: $id) { nodes { title } } }", {"id": gid(a)})
    assert plain["data"]["graph"]["nodes"] == [{"title": "a"}, {"title": "b"}]
    through_fragment = await gql(
        "query($id: ID!) { graph(noteId: $id) { ...G } } "
        "fragment G on NoteGraph { nodes { ... on GraphNode { community } } }",
        {"id": gid(a)},
    )
    assert through_fragment["data"]["graph"]["nodes"] == [{"community": 0}, {"community": 0}]
    labelled = await _graph(gql, a)
    assert [n["community"] for n in labelled["nodes"]] == [0, 0]
    assert asked == [(False, False), (True, False), (True, True)]


async def test_a_pair_linked_both_ways_is_one_edge_per_kind_in_its_stronger_direction(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    a, b, c = await add_notes(runtime.notes, memory, ["a", "b", "c"])
    await add_links(
        runtime.db,
        memory,
        [
            Link(a, b, "explicit", 0.3),
            Link(b, a, "explicit", 0.7),  # the stronger direction
            Link(a, b, "wiki", 1.0),  # another kind: its own edge, one way only
            Link(c, a, "explicit", 0.5),
        ],
    )
    graph = await _graph(gql, a, depth=1)
    edges = {
        (e["edgeType"], e["source"], e["target"]): (e["score"], e["bidirectional"])
        for e in graph["edges"]
    }
    assert edges == {
        ("EXPLICIT", gid(b), gid(a)): (pytest.approx(0.7), True),
        ("WIKI", gid(a), gid(b)): (1.0, False),
        ("EXPLICIT", gid(c), gid(a)): (0.5, False),
    }
    # Ordered by the unordered pair (smaller id first), then kind.
    order = [
        (min(e["source"], e["target"], key=_uuid), max(e["source"], e["target"], key=_uuid))
        for e in graph["edges"]
    ]
    assert order == sorted(order, key=lambda p: (_uuid(p[0]), _uuid(p[1])))


def _uuid(global_id: str) -> UUID:
    return parse_note_id(global_id)


async def test_the_walk_overlaps_the_audit_write_and_the_answer_waits_for_its_commit(
    gql: GraphQLCall, runtime: Runtime, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = await add_notes(runtime.notes, memory, ["a", "b"])
    await add_links(runtime.db, memory, [Link(a, b, "explicit", 0.5)])
    events: list[str] = []
    record, neighbourhood = runtime.audit.record, runtime.services.traversal.columns

    async def recording(records: Any) -> None:
        events.append("record")
        await record(records)
        events.append("recorded")

    async def walking(*args: Any, **kwargs: Any) -> Any:
        events.append("walk")
        return await neighbourhood(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(runtime.audit, "record", recording)
        patched.setattr(runtime.services.traversal, "columns", walking)
        graph = await _graph(gql, a)
    assert _titles(graph) == ["a", "b"]
    # The walk began before the read scope's audit row committed.
    assert events.index("walk") < events.index("recorded")


async def test_a_graph_whose_read_scope_cannot_be_audited_is_refused_after_the_walk(
    gql: GraphQLCall, runtime: Runtime, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (a,) = await add_notes(runtime.notes, memory, ["secret"])
    walked: list[bool] = []
    neighbourhood = runtime.services.traversal.columns

    async def walking(*args: Any, **kwargs: Any) -> Any:
        found = await neighbourhood(*args, **kwargs)
        walked.append(True)
        return found

    async def audit_down(records: object) -> None:
        # Fails once the walk has its answer, the latest a failure can come.
        for _ in range(10_000):
            if walked:
                break
            await asyncio.sleep(0)
        raise Unavailable("The audit log is unavailable; the request was refused")

    with monkeypatch.context() as patched:
        patched.setattr(runtime.audit, "record", audit_down)
        patched.setattr(runtime.services.traversal, "columns", walking)
        body = await gql(GRAPH, {"id": gid(a)})
    assert walked == [True]
    assert error_codes(body) == ["SERVICE_UNAVAILABLE"]
    assert body["data"] is None
    assert "secret" not in str(body)


async def test_two_graph_fields_in_one_request_both_answer_after_the_audit_write(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    # Both resolvers wait for the same read-scope audit write; neither may fail for the
    # other having seen it settle first.
    a, b = await add_notes(runtime.notes, memory, ["a", "b"])
    await add_links(runtime.db, memory, [Link(a, b, "explicit", 0.5)])
    body = await gql(
        "query($id: ID!) { one: graph(noteId: $id) { nodes { title } } "
        "two: graph(noteId: $id, depth: 0) { nodes { title } } }",
        {"id": gid(a)},
    )
    assert "errors" not in body, body
    assert body["data"] == {
        "one": {"nodes": [{"title": "a"}, {"title": "b"}]},
        "two": {"nodes": [{"title": "a"}]},
    }
