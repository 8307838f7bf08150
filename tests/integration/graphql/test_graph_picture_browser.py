"""The graph picture in a real headless Chromium with no internet: it draws the query's
nodes and links, coloured by community, with every file from this server."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

from fortemi.platform.ids import to_global_id
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall
from tests.support.browser import chromium
from tests.support.traversal import Link, add_links, add_notes

pytestmark = pytest.mark.live

_STATUS = "document.getElementById('fortemi-graph-status')"
_COUNT = "document.querySelectorAll('#fortemi-graph {0}').length"


async def test_the_picture_draws_every_node_and_link_the_graph_query_returns(
    live_server: str,
    user_token: str,
    gql: GraphQLCall,
    runtime: Runtime,
    memory: str,
    tmp_path: Path,
) -> None:
    titles = ["start", "a1", "a2", "a3", "b1", "b2", "b3", "far"]
    ids = await add_notes(runtime.notes, memory, titles)
    start, a1, a2, a3, b1, b2, b3, far = ids
    await add_links(
        runtime.db,
        memory,
        [
            Link(start, a1, "explicit", 1.0),
            Link(a1, a2, "semantic", 0.9),
            Link(a2, a1, "semantic", 0.9),
            Link(a2, a3, "semantic", 0.8),
            Link(a1, a3, "semantic", 0.85),
            Link(start, b1, "wiki", 1.0),
            Link(b1, b2, "explicit", 0.7),
            Link(b2, b3, "wiki", 0.9),
            Link(b1, b3, "explicit", 0.6),
            Link(b3, far, "explicit", 1.0),  # depth 3: left out at depth 2
        ],
    )
    expected = await gql(
        "query($id: ID!) { graph(noteId: $id, depth: 2) { nodes { id community } "
        "edges { edgeType } } }",
        {"id": to_global_id("Note", start)},
    )
    graph = expected["data"]["graph"]
    assert len(graph["nodes"]) == 7
    origin = f"http://{live_server}"
    query = urlencode({"note": to_global_id("Note", start), "memory": memory, "depth": 2})
    async with chromium(tmp_path) as page:
        await page.navigate(f"{origin}/graph?{query}")
        # No token yet: the server's refusal is shown, nothing is drawn.
        await page.wait_for(f"{_STATUS}?.dataset.state === 'error'", "the refusal")
        assert "UNAUTHENTICATED" in await page.evaluate(f"{_STATUS}.textContent")
        await page.evaluate("document.getElementById('fortemi-graph-token').focus()")
        await page.insert_text(user_token)
        await page.evaluate("document.querySelector('#fortemi-graph-form button').click()")
        await page.wait_for(f"{_STATUS}.dataset.state === 'drawn'", "the drawing")

        drawn_nodes = await page.evaluate(_COUNT.format(".fortemi-node"))
        drawn_ids = await page.evaluate(
            "[...document.querySelectorAll('#fortemi-graph .fortemi-node')].map(n => n.dataset.id)"
        )
        edge_kinds = await page.evaluate(
            "[...document.querySelectorAll('#fortemi-graph .fortemi-edge')]"
            ".map(e => e.getAttribute('class').split('fortemi-edge-')[1])"
        )
        dashes = await page.evaluate(
            "[...document.querySelectorAll('#fortemi-graph .fortemi-edge-wiki')]"
            ".map(e => e.getAttribute('stroke-dasharray'))"
        )
        fills = await page.evaluate(
            "Object.fromEntries([...document.querySelectorAll('#fortemi-graph .fortemi-node')]"
            ".map(n => [n.dataset.id, n.querySelector('circle').getAttribute('fill')]))"
        )
        legend = await page.evaluate("document.getElementById('fortemi-graph-legend').innerText")

        # A reload remembers the token (GraphiQL's key) and draws again.
        await page.navigate(f"{origin}/graph?{query}")
        await page.wait_for(f"{_STATUS}?.dataset.state === 'drawn'", "the drawing again")
        requested = [
            event["params"]["request"]["url"]
            for event in page.events
            if event["method"] == "Network.requestWillBeSent"
        ]
        problems = [
            event["params"]["entry"]
            for event in page.events
            if event["method"] == "Log.entryAdded"
            and event["params"]["entry"]["level"] == "error"
            and "401" not in event["params"]["entry"]["text"]
        ]

    assert drawn_nodes == len(graph["nodes"])
    assert drawn_ids == [n["id"] for n in graph["nodes"]]
    assert sorted(edge_kinds) == sorted(e["edgeType"].lower() for e in graph["edges"])
    assert len(dashes) == 2
    assert all(dashes)  # wiki links are dashed
    community = {n["id"]: n["community"] for n in graph["nodes"]}
    # One colour per community: same community, same fill; different ones differ.
    by_community: dict[int, set[str]] = {}
    for node_id, fill in fills.items():
        by_community.setdefault(community[node_id], set()).add(fill)
    assert all(len(f) == 1 for f in by_community.values())
    assert len({f for fs in by_community.values() for f in fs}) == len(by_community)
    assert "semantic" in legend
    assert "wiki" in legend
    assert [url for url in requested if not url.startswith(origin)] == []
    assert problems == [], json.dumps(problems, indent=1)
