"""The Strawberry schema and its security extensions (OWASP's GraphQL controls)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from functools import partial
from typing import Any

import strawberry
from graphql import GraphQLError
from graphql.pyutils import RefMap
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
)
from strawberry.extensions.max_aliases import create_validator as alias_rule
from strawberry.extensions.query_depth_limiter import create_validator as depth_rule
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext, ExecutionResult

from fortemi.graphql.audit import AuditQuery, AuditSubscription
from fortemi.graphql.errors import render_errors
from fortemi.graphql.events import EventSubscription
from fortemi.graphql.jobs import JobMutation, JobQuery
from fortemi.graphql.memories import MemoryMutation, MemoryQuery
from fortemi.graphql.metrics import OperationMetrics, count_errors
from fortemi.graphql.notes import NoteMutation, NoteQuery
from fortemi.graphql.notes.types import Note
from fortemi.graphql.policies import PolicyMutation, PolicyQuery
from fortemi.graphql.principal import PrincipalQuery
from fortemi.graphql.search import SearchQuery
from fortemi.graphql.webhooks import WebhookMutation, WebhookQuery
from fortemi.platform.settings import Settings

__all__ = ["build_schema", "print_sdl"]

Query = merge_types(
    "Query",
    (
        PrincipalQuery,
        MemoryQuery,
        NoteQuery,
        SearchQuery,
        JobQuery,
        WebhookQuery,
        AuditQuery,
        PolicyQuery,
    ),
)
Mutation = merge_types(
    "Mutation", (MemoryMutation, NoteMutation, JobMutation, WebhookMutation, PolicyMutation)
)
Subscription = merge_types("Subscription", (EventSubscription, AuditSubscription))


class PerEventExecutor(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's executor, with memo caches of its own for each subscription event.

    graphql-core 3.3 runs each event on a shallow copy of the subscription's executor, so
    every copy shares one subfield memo keyed by the identity of field lists made afresh
    per event: it grew by about 22 objects per event delivered for as long as the
    subscription lived (4.4 million objects after 200,000 deliveries, and garbage-collection
    pauses past a second, in ``benchmarks/events.py``). A fresh memo per event keeps its
    purpose (one event's lists of values) and bounds it.
    """

    def build_per_event_executor(self, payload: Any) -> Any:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        executor._stream_usages = RefMap()
        return executor


class FortemiSchema(strawberry.Schema):
    """Renders every result's errors in one place: HTTP (``execute``) and WebSocket (``stream``).

    Not an extension: parse errors leave strawberry's extension lifecycle as exceptions, so
    an ``on_operation`` hook would never see them.
    """

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # render_error logs what deserves a log line (unexpected errors, with the request
        # id); strawberry's default would log every expected NOT_FOUND as an error.
        return None

    async def execute(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        result = render_errors(await super().execute(*args, **kwargs), kwargs.get("context_value"))
        count_errors(result)
        return result  # type: ignore[no-any-return]

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        source = await super().stream(*args, **kwargs)
        context = kwargs.get("context_value")

        async def rendered() -> AsyncIterator[Any]:
            async with aclosing(source):
                async for result in source:
                    rendered = render_errors(result, context)
                    count_errors(rendered)
                    yield rendered

        return rendered()


def build_schema(settings: Settings) -> strawberry.Schema:
    # The depth and alias rules are built once: the validation cache keys on the rule
    # classes, so rules made afresh per operation (QueryDepthLimiter/MaxAliasesLimiter as
    # factories) would make every lookup miss and every request revalidate.
    limits = (
        depth_rule(settings.max_query_depth, None),
        alias_rule(settings.max_aliases),
    )
    # Factories, not instances: strawberry builds fresh extensions per operation. The caches
    # are shared across instances (keyed by size) and bounded.
    extensions: list[Callable[[], SchemaExtension]] = [
        OperationMetrics,
        # The token limit bounds the parser's work; depth and aliases are checked in
        # validation, before any resolver runs.
        partial(MaxTokensLimiter, max_token_count=settings.max_query_tokens),
        partial(AddValidationRules, list(limits)),
        partial(ParserCache, maxsize=settings.graphql_cache_size),
        partial(ValidationCache, maxsize=settings.graphql_cache_size),
    ]
    if settings.is_production and not settings.graphql_introspection:
        extensions.append(DisableIntrospection)
    return FortemiSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[Note],
        extensions=extensions,
        execution_context_class=PerEventExecutor,
    )


def print_sdl(schema: Any) -> str:
    return str(schema.as_str()).rstrip() + "\n"
