"""The live audit feed over graphql-transport-ws, on a live uvicorn port."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport

from fortemi.auth.local_issuer import LocalIssuer

pytestmark = pytest.mark.live

# Denies only: sam's request also records allows (entering the memory) before the deny.
FEED = gql(
    'subscription { auditEvents(filter: {userId: "sam-subject", decision: "deny"}) '
    "{ userId action decision reason } }"
)


def _transport(live_server: str, token: str) -> WebsocketsTransport:
    return WebsocketsTransport(
        url=f"ws://{live_server}/graphql",
        init_payload={"authorization": f"Bearer {token}"},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
    )


async def test_auditors_see_decisions_as_they_are_recorded(
    live_server: str, issuer: LocalIssuer
) -> None:
    auditor = issuer.mint("ivy-live", roles=["auditor"])
    sam = issuer.mint("sam-subject", groups=["data-team"], roles=["viewer"])
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:

        async def provoke() -> None:
            await http.post(
                "/graphql",
                json={"query": 'query { notes(filter: {project: "poimen"}) { totalCount } }'},
                headers={"Authorization": f"Bearer {sam}"},
            )

        async with Client(transport=_transport(live_server, auditor)) as session:
            queue: asyncio.Queue[object] = asyncio.Queue()

            async def consume() -> None:
                async for event in session.subscribe(FEED):
                    await queue.put(event)

            consumer = asyncio.create_task(consume())
            received = None
            # The server subscribes to the feed asynchronously: provoke until one arrives
            # (a bounded number of attempts, each waiting a while for the next event).
            for _ in range(20):
                await provoke()
                try:
                    received = await asyncio.wait_for(queue.get(), timeout=1)
                    break
                except TimeoutError:
                    continue
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
    assert received == {
        "auditEvents": {
            "userId": "sam-subject",
            "action": "read",
            "decision": "deny",
            "reason": "not_in_allowed_groups",
        }
    }


async def test_the_feed_ends_when_the_subscribers_token_expires(
    live_server: str, issuer: LocalIssuer
) -> None:
    short = issuer.mint("ivy-short", roles=["auditor"], ttl=timedelta(seconds=2))
    async with Client(transport=_transport(live_server, short)) as session:
        # A hang guard, not a speed check: the feed must complete on its own.
        async with asyncio.timeout(60):
            received = [event async for event in session.subscribe(FEED)]
    assert received == []


async def test_non_auditors_cannot_subscribe(live_server: str, issuer: LocalIssuer) -> None:
    viewer = issuer.mint("vic", roles=["viewer"])
    async with Client(transport=_transport(live_server, viewer)) as session:
        with pytest.raises(Exception, match="may not read audit"):
            async for _ in session.subscribe(FEED):
                pass
