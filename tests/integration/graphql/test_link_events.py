"""Link and graph events over graphql-transport-ws: note.links_changed in noteEvents,
filtered by the read scope like every note event; graph.* in graphEvents, for memory
readers, ending when the memory is no longer readable."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.graph.events import graph_event
from fortemi.runtime import Runtime
from tests.support import graphql_ws as ws_client
from tests.support.subscriptions import Events, collect, ws_transport

pytestmark = pytest.mark.live

LINK_FEED = (
    'subscription { noteEvents(types: ["note.links_changed"]) { type entityId actor payload } }'
)
GRAPH_FEED = "subscription($m: String) { graphEvents(memory: $m) { type memory payload } }"
PLATFORM_ONLY: dict[str, Any] = {
    "version": 1,
    "access_level": "group",
    "allowed_groups": ["platform-team"],
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}, "delete": {"required_role": "editor"}},
}


async def _call(
    http: httpx.AsyncClient, token: str, memory: str, query: str, variables: dict[str, Any]
) -> dict[str, Any]:
    response = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
    )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def _create(http: httpx.AsyncClient, token: str, memory: str, **note: Any) -> str:
    data = await _call(
        http, token, memory, "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": note},
    )  # fmt: skip
    note_id: str = data["createNote"]["id"]
    return note_id


async def test_link_changes_reach_subscribers_who_may_read_the_note(
    live_server: str, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    rounds = itertools.count()
    mine: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:

        async def provoke() -> None:
            n = next(rounds)
            # poimen notes linking each other: alice may read neither.
            await _create(http, dana, memory, title=f"secret {n}", project="poimen")
            await _create(http, dana, memory, title=f"s{n}", content=f"[[secret {n}]]",
                          project="poimen")  # fmt: skip
            target = await _create(http, user_token, memory, title=f"target {n}")
            source = await _create(http, user_token, memory, title=f"source {n}")
            await _call(
                http, user_token, memory,
                "mutation($f: ID!, $t: ID!) { createNoteLink(from: $f, to: $t) { created } }",
                {"f": source, "t": target},
            )  # fmt: skip
            wiki = await _create(http, user_token, memory, title=f"w{n}", content=f"[[target {n}]]")
            mine.update(source=source, target=target, wiki=wiki)

        def enough(events: Events) -> bool:
            seen = {(e["entityId"], e["payload"]["kind"]) for e in events}
            return (
                bool(mine)
                and {
                    (mine["source"], "explicit"),
                    (mine["target"], "explicit"),
                    (mine["wiki"], "wiki"),
                    (mine["target"], "wiki"),
                }
                <= seen
            )

        events = await collect(ws_transport(live_server, user_token, memory), LINK_FEED, {},
                               provoke, enough)  # fmt: skip
    assert {e["type"] for e in events} == {"note.links_changed"}
    assert all(e["payload"]["project"] is None for e in events)  # never poimen's
    by_note = {(e["entityId"], e["payload"]["kind"]): e for e in events}
    assert by_note[(mine["source"], "explicit")]["payload"]["directions"] == ["outgoing"]
    assert by_note[(mine["source"], "explicit")]["actor"] == "alice"
    assert by_note[(mine["target"], "explicit")]["payload"]["directions"] == ["incoming"]
    assert by_note[(mine["wiki"], "wiki")]["payload"]["directions"] == ["outgoing"]
    assert by_note[(mine["target"], "wiki")]["actor"] == "alice"


async def test_graph_events_reach_memory_readers_for_their_memory_only(
    live_server: str, runtime: Runtime, user_token: str, memory: str
) -> None:
    bus = runtime.services.events

    async def provoke() -> None:
        await bus.publish(graph_event("maintained", f"{memory}_other", "job", {"n": 1}))
        await bus.publish(graph_event("maintained", memory, "job", {"nodes": 3}))

    events = await collect(
        ws_transport(live_server, user_token, memory), GRAPH_FEED, {"m": memory}, provoke, bool
    )
    assert events[0] == {"type": "graph.maintained", "memory": memory, "payload": {"nodes": 3}}


async def test_graph_events_of_an_unknown_memory_or_type_are_refused(
    live_server: str, user_token: str, memory: str
) -> None:
    for variables, document, code in (
        ({"m": "no_such_memory"}, GRAPH_FEED, "NOT_FOUND"),
        ({}, 'subscription { graphEvents(types: ["graph.nope"]) { type } }', "BAD_USER_INPUT"),
    ):
        async with Client(transport=ws_transport(live_server, user_token, memory)) as session:
            feed = gql(document)
            feed.variable_values = variables
            with pytest.raises(TransportQueryError) as raised:
                async for _ in session.subscribe(feed):
                    pass
        assert raised.value.errors is not None
        assert raised.value.errors[0]["extensions"]["code"] == code


async def test_graph_events_end_with_not_found_once_the_memory_is_no_longer_readable(
    live_server: str, runtime: Runtime, user_token: str, memory: str
) -> None:
    bus = runtime.services.events
    async with ws_client.socket(live_server, user_token, memory) as ws:
        await ws_client.subscribe(ws, "graph", "subscription { graphEvents { type } }")
        for _ in range(20):
            await bus.publish(graph_event("linked", memory, "job", {}))
            try:
                first = await ws_client.next_of(ws, "graph", wait=1)
                break
            except TimeoutError:
                continue
        else:
            raise AssertionError("graphEvents never delivered")
        assert first["payload"]["data"]["graphEvents"] == {"type": "graph.linked"}
        await runtime.policies.put(
            "memory", memory, memory, {**PLATFORM_ONLY, "memory": memory}, actor="test"
        )
        await bus.publish(graph_event("linked", memory, "job", {}))
        while (message := await ws_client.next_of(ws, "graph"))["type"] == "next":
            if message["payload"].get("errors"):
                break
    assert [e["extensions"]["code"] for e in message["payload"]["errors"]] == ["NOT_FOUND"]
