"""Live GraphQL subscriptions for tests: a graphql-transport-ws client and a collector."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport

Events = list[dict[str, Any]]


def ws_transport(live_server: str, token: str, memory: str) -> WebsocketsTransport:
    """A graphql-transport-ws connection to ``live_server`` as ``token`` in ``memory``."""
    return WebsocketsTransport(
        url=f"ws://{live_server}/graphql",
        init_payload={"authorization": f"Bearer {token}", "x-fortemi-memory": memory},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
    )


async def collect(
    transport: WebsocketsTransport,
    subscription: str,
    variables: dict[str, Any],
    provoke: Callable[[], Awaitable[None]],
    enough: Callable[[Events], bool],
) -> Events:
    """The events of one subscription (its single root field's values), calling
    ``provoke`` until ``enough(events)`` holds; at most 20 rounds of a second each. An
    error the subscription ends with is raised."""
    received: Events = []
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    async with Client(transport=transport) as session:
        feed = gql(subscription)
        feed.variable_values = variables

        async def consume() -> None:
            async for result in session.subscribe(feed):
                (event,) = result.values()
                await queue.put(event)

        consumer = asyncio.create_task(consume())
        try:
            for _ in range(20):
                await provoke()
                try:
                    while True:
                        received.append(await asyncio.wait_for(queue.get(), timeout=1))
                        if enough(received):
                            return received
                except TimeoutError:
                    if consumer.done():
                        consumer.result()
        finally:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
    raise AssertionError(f"not enough events arrived: {received}")
