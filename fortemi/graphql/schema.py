"""The Strawberry schema and its security extensions (OWASP's GraphQL controls)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from functools import partial
from typing import Any

import strawberry
from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLObjectType,
    GraphQLSchema,
    get_operation_ast,
)
from graphql.execution.executor import Executor
from graphql.pyutils import RefMap
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
)
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.execution import PreExecutionError

from fortemi.graphql.answers import AnswerQuery, AnswerSubscription
from fortemi.graphql.attachments import AttachmentMutation, AttachmentQuery
from fortemi.graphql.audit import AuditQuery, AuditSubscription
from fortemi.graphql.documents import DocumentTypeMutation, DocumentTypeQuery
from fortemi.graphql.errors import VariableValuesError, render_errors
from fortemi.graphql.events import EventSubscription
from fortemi.graphql.flat import (
    Columns,
    complete_flat,
    complete_flat_list,
    flat_item_type,
    flat_plan,
)
from fortemi.graphql.graph import GraphQuery
from fortemi.graphql.jobs import JobMutation, JobQuery
from fortemi.graphql.keys import KeyMutation, KeyQuery
from fortemi.graphql.limits import QueryLimits, operation_limits_rule, oversized_variables
from fortemi.graphql.links import LinkMutation, LinkQuery
from fortemi.graphql.maintenance import MaintenanceMutation, MaintenanceQuery
from fortemi.graphql.memories import MemoryMutation, MemoryQuery
from fortemi.graphql.metrics import OperationMetrics, count_errors
from fortemi.graphql.notes import NoteMutation, NoteQuery
from fortemi.graphql.notes.types import Note
from fortemi.graphql.policies import PolicyMutation, PolicyQuery
from fortemi.graphql.principal import PrincipalQuery
from fortemi.graphql.retrieve import RetrieveQuery
from fortemi.graphql.search import SearchQuery
from fortemi.graphql.shards import ShardMutation
from fortemi.graphql.vault_links import VaultLinkQuery
from fortemi.graphql.vault_sync import VaultSyncMutation
from fortemi.graphql.vocabulary import VocabularyMutation, VocabularyQuery
from fortemi.graphql.webhooks import WebhookMutation, WebhookQuery
from fortemi.platform.settings import Settings

__all__ = ["build_schema", "print_sdl"]

Query = merge_types(
    "Query",
    (
        PrincipalQuery,
        MemoryQuery,
        NoteQuery,
        LinkQuery,
        SearchQuery,
        RetrieveQuery,
        AnswerQuery,
        GraphQuery,
        JobQuery,
        WebhookQuery,
        AuditQuery,
        PolicyQuery,
        VocabularyQuery,
        MaintenanceQuery,
        VaultLinkQuery,
        DocumentTypeQuery,
        AttachmentQuery,
        KeyQuery,
    ),
)
Mutation = merge_types(
    "Mutation",
    (
        MemoryMutation,
        NoteMutation,
        LinkMutation,
        JobMutation,
        WebhookMutation,
        PolicyMutation,
        VocabularyMutation,
        MaintenanceMutation,
        VaultSyncMutation,
        DocumentTypeMutation,
        AttachmentMutation,
        ShardMutation,
        KeyMutation,
    ),
)
Subscription = merge_types(
    "Subscription", (EventSubscription, AuditSubscription, AnswerSubscription)
)


class PerEventExecutor(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's executor, marking variable errors and with memo caches per event.

    ``build`` fails with a list of errors in two cases only: the document names no
    operation to run, or the operation's variables cannot be coerced. Once the operation
    is found, every error it returns is about variable values and becomes a
    :class:`VariableValuesError`, so it is rendered as ``BAD_USER_INPUT`` by its origin.

    graphql-core 3.3 runs each event on a shallow copy of the subscription's executor, so
    every copy shares one subfield memo keyed by the identity of field lists made afresh
    per event: it grew by about 22 objects per event delivered for as long as the
    subscription lived (4.4 million objects after 200,000 deliveries, and garbage-collection
    pauses past a second, in ``benchmarks/events.py``). A fresh memo per event keeps its
    purpose (one event's lists of values) and bounds it.
    """

    @classmethod
    def build(
        cls,
        schema: GraphQLSchema,
        document: DocumentNode,
        root_value: Any = None,
        context_value: Any = None,
        raw_variable_values: dict[str, Any] | None = None,
        operation_name: str | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> list[GraphQLError] | Executor[Any]:
        built = super().build(
            schema,
            document,
            root_value,
            context_value,
            raw_variable_values,
            operation_name,
            *args,
            **kwargs,
        )
        if isinstance(built, list) and get_operation_ast(document, operation_name) is not None:
            return [VariableValuesError.of(error) for error in built]
        return built

    def complete_object_value(
        self,
        return_type: GraphQLObjectType,
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        # Objects of plain leaf fields (a neighbourhood's nodes and edges) skip the
        # per-field machinery: see fortemi.graphql.flat.
        plan = flat_plan(return_type)
        if plan is not None:
            grouped, deferred, forbidden = self.collect_subfields(return_type, field_details_list)
            if not deferred and not forbidden:
                data = complete_flat(plan, grouped, return_type.name, result)
                if data is not None:
                    return data
        return super().complete_object_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def complete_list_value(
        self,
        return_type: Any,
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> Any:
        # A list of flat objects is completed in one loop, its selection collected once;
        # a list field carrying a directive (@stream) takes the ordinary path.
        item_type = flat_item_type(return_type)
        if (
            item_type is not None
            and isinstance(result, list | tuple | Columns)
            and not any(details.node.directives for details in field_details_list)
        ):
            plan = flat_plan(item_type)
            grouped, deferred, forbidden = self.collect_subfields(item_type, field_details_list)
            if plan is not None and not deferred and not forbidden:
                items = complete_flat_list(plan, grouped, item_type.name, result)
                if items is not None:
                    return items
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def build_per_event_executor(self, payload: Any) -> Any:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        executor._stream_usages = RefMap()
        return executor


class FortemiSchema(strawberry.Schema):
    """Renders every result's errors in one place: HTTP (``execute``) and WebSocket (``stream``).

    Not an extension: parse errors leave strawberry's extension lifecycle as exceptions, so
    an ``on_operation`` hook would never see them. Variables are measured here too, before
    strawberry or graphql-core touches them (see :func:`oversized_variables`).
    """

    max_list_items: int = 1000
    hide_suggestions: bool = False

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # render_error logs what deserves a log line (unexpected errors, with the request
        # id); strawberry's default would log every expected NOT_FOUND as an error.
        return None

    def _refused(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> PreExecutionError | None:
        variables = kwargs.get("variable_values", args[1] if len(args) > 1 else None)
        error = oversized_variables(
            variables if isinstance(variables, dict) else None, max_items=self.max_list_items
        )
        return None if error is None else PreExecutionError(data=None, errors=[error])

    def _render(self, result: Any, context: Any) -> Any:
        rendered = render_errors(result, context, hide_suggestions=self.hide_suggestions)
        count_errors(rendered)
        return rendered

    async def execute(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        result = self._refused(args, kwargs) or await super().execute(*args, **kwargs)
        return self._render(result, kwargs.get("context_value"))  # type: ignore[no-any-return]

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        refused = self._refused(args, kwargs)
        context = kwargs.get("context_value")
        if refused is not None:

            async def refusal() -> AsyncIterator[Any]:
                yield self._render(refused, context)

            return refusal()
        source = await super().stream(*args, **kwargs)

        async def rendered() -> AsyncIterator[Any]:
            async with aclosing(source):
                async for result in source:
                    yield self._render(result, context)

        return rendered()


def build_schema(settings: Settings) -> strawberry.Schema:
    # The rule is built once: the validation cache keys on the rule classes, so a rule
    # made afresh per operation would make every lookup miss and every request revalidate.
    # It replaces strawberry's depth and alias rules, which expand every fragment spread
    # (exponential in the document's length) and crash on empty selection sets.
    limits = operation_limits_rule(
        QueryLimits(
            max_depth=settings.max_query_depth,
            max_aliases=settings.max_aliases,
            max_cost=settings.max_query_cost,
            max_list_items=settings.max_list_items,
            default_page_size=settings.max_page_size,
        )
    )
    # Factories, not instances: strawberry builds fresh extensions per operation. The caches
    # are shared across instances (keyed by size) and bounded.
    extensions: list[Callable[[], SchemaExtension]] = [
        OperationMetrics,
        # The token limit bounds the parser's work; depth, cost and aliases are checked in
        # validation, before any resolver runs.
        partial(MaxTokensLimiter, max_token_count=settings.max_query_tokens),
        partial(AddValidationRules, [limits]),
        partial(ParserCache, maxsize=settings.graphql_cache_size),
        partial(ValidationCache, maxsize=settings.graphql_cache_size),
    ]
    if settings.is_production and not settings.graphql_introspection:
        extensions.append(DisableIntrospection)
    schema = FortemiSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[Note],
        extensions=extensions,
        execution_context_class=PerEventExecutor,
    )
    schema.max_list_items = settings.max_list_items
    # Suggestions ("Did you mean 'auditLog'?") would spell out the schema that
    # introspection keeps to itself.
    schema.hide_suggestions = settings.is_production and not settings.graphql_introspection
    return schema


def print_sdl(schema: Any) -> str:
    return str(schema.as_str()).rstrip() + "\n"
