"""A long subscription's memory stays flat however many events it delivers."""

from __future__ import annotations

import gc
from collections.abc import AsyncGenerator
from typing import Any

import strawberry

from fortemi.graphql.schema import PerEventExecutor, build_schema
from fortemi.platform.settings import Settings


@strawberry.type
class Tick:
    n: int
    label: str


@strawberry.type
class Query:
    ok: bool = True


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def ticks(self, count: int) -> AsyncGenerator[Tick, None]:
        for n in range(count):
            yield Tick(n=n, label="tick")


def _schema(executor: Any) -> strawberry.Schema:
    return strawberry.Schema(
        query=Query, subscription=Subscription, execution_context_class=executor
    )


async def _growth(schema: strawberry.Schema, events: int) -> int:
    """Objects alive after ``events`` events of a subscription that is still open, beyond
    those alive after its first 100."""
    query = "subscription($count: Int!) { ticks(count: $count) { n label } }"
    stream: Any = await schema.subscribe(query, variable_values={"count": events + 1})
    before = after = 0
    index = 0
    async for result in stream:
        assert result.errors is None
        index += 1
        if index in (100, events):
            gc.collect()
            if index == 100:
                before = len(gc.get_objects())
            else:
                after = len(gc.get_objects())
                break
    await stream.aclose()
    return after - before


async def test_a_subscription_keeps_no_objects_per_event_delivered() -> None:
    # graphql-core's own executor keeps ~20 objects per event for the subscription's life.
    assert await _growth(_schema(PerEventExecutor), 3000) < 1000


def test_the_served_schema_runs_subscriptions_with_that_executor(tmp_path: Any) -> None:
    schema = build_schema(Settings(home=tmp_path))
    assert schema.execution_context_class is PerEventExecutor
