"""noteEvents over graphql-transport-ws: scoped to what the subscriber may read, resumable."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError

from fortemi.auth.local_issuer import LocalIssuer
from tests.support.subscriptions import collect, ws_transport

pytestmark = pytest.mark.live

FEED = "subscription($after: String) { noteEvents(after: $after) { id type entityId payload } }"


async def _create(http: httpx.AsyncClient, token: str, memory: str, **note: Any) -> str:
    response = await http.post(
        "/graphql",
        json={"query": "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
              "variables": {"i": note}},
        headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
    )  # fmt: skip
    body = response.json()
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


async def test_subscribers_get_readable_note_events_with_their_titles_and_can_resume(
    live_server: str, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    created: list[str] = []
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:

        async def provoke() -> None:
            await _create(http, dana, memory, title="poimen only", project="poimen")
            created.append(await _create(http, user_token, memory, title="open"))

        first = await collect(
            ws_transport(live_server, user_token, memory), FEED, {"after": None}, provoke, bool
        )
        # alice may not read poimen: its (earlier) event never reaches her.
        assert all(e["payload"]["project"] != "poimen" for e in first)
        assert first[-1]["type"] == "note.created"
        assert first[-1]["entityId"] in created
        assert first[-1]["payload"]["title"] == "open"

        # Missed while away: resuming after the last id seen replays it first.
        missed = await _create(http, user_token, memory, title="while away")

        async def nothing() -> None:
            return None

        replayed = await collect(
            ws_transport(live_server, user_token, memory),
            FEED,
            {"after": first[-1]["id"]},
            nothing,
            bool,
        )
        assert replayed[0]["entityId"] == missed


async def test_resuming_after_an_unknown_id_asks_for_a_resync(
    live_server: str, user_token: str, memory: str
) -> None:
    async with Client(transport=ws_transport(live_server, user_token, memory)) as session:
        feed = gql(FEED)
        feed.variable_values = {"after": "not-an-id"}
        with pytest.raises(TransportQueryError) as raised:
            async for _ in session.subscribe(feed):
                pass
    assert raised.value.errors is not None
    assert raised.value.errors[0]["extensions"]["reason"] == "resync_required"
