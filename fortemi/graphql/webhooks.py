"""Webhooks as clients see them: register, list, delete, and read their deliveries.

A webhook receives every event of its memory that its types ask for, whichever project
or skill the event concerns, so creating, reading and deleting webhooks all take
``admin`` on the memory: a memory the caller may not enter is NOT_FOUND, one they may
read but not administer FORBIDDEN, before anything is looked up.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from fortemi.auth.decision import Action, Resource
from fortemi.graphql.context import Info
from fortemi.graphql.pagination import Connection, Edge, PageInfo
from fortemi.platform.errors import NotFound
from fortemi.platform.ids import parse_id, to_global_id
from fortemi.webhooks import models

__all__ = ["WebhookMutation", "WebhookQuery"]


@strawberry.type(description="One POST of a delivery (same-host redirects followed within it)")
class WebhookAttempt:
    attempt: int
    at: datetime
    outcome: str = strawberry.field(description="delivered, retry or failed")
    status_code: int | None
    failure_class: str | None
    code: str | None
    duration_ms: float
    response_excerpt: str = strawberry.field(description="The response's first 256 characters")


@strawberry.type(description="One event for one webhook, and every attempt to deliver it")
class WebhookDelivery:
    id: strawberry.ID
    event_id: str
    event_type: str
    status: str = strawberry.field(description="pending, delivered or failed")
    job_id: strawberry.ID | None
    created_at: datetime
    finished_at: datetime | None
    attempts: list[WebhookAttempt]


@strawberry.type
class WebhookDeliveryEdge(Edge[WebhookDelivery]):
    pass


@strawberry.type
class WebhookDeliveryConnection(Connection[WebhookDeliveryEdge]):
    has_next_page: bool = strawberry.field(
        deprecation_reason="Use pageInfo.hasNextPage, as on every other list"
    )
    end_cursor: str | None = strawberry.field(
        deprecation_reason="Use pageInfo.endCursor, as on every other list"
    )


@strawberry.type(description="An HTTP endpoint that receives a memory's events, signed")
class Webhook:
    id: strawberry.ID
    memory: str
    url: str
    event_types: list[str]
    description: str | None
    created_by: str
    created_at: datetime
    signing_secret: str | None = strawberry.field(
        description="The generated signing secret: returned once, by createWebhook, when "
        "you gave none; null everywhere else"
    )

    @classmethod
    def from_model(cls, hook: models.Webhook, secret: str | None = None) -> Webhook:
        return cls(
            id=strawberry.ID(to_global_id("Webhook", hook.id)),
            memory=hook.memory,
            url=hook.url,
            event_types=list(hook.event_types),
            description=hook.description,
            created_by=hook.created_by,
            created_at=hook.created_at,
            signing_secret=secret,
        )

    @strawberry.field(description="Deliveries, newest first")
    async def deliveries(
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> WebhookDeliveryConnection:
        page = await info.context.services.webhooks.deliveries(
            parse_id(self.id, "Webhook"), first=first, after=after
        )
        return WebhookDeliveryConnection(
            edges=[
                WebhookDeliveryEdge(cursor=cursor, node=_delivery(delivery, attempts))
                for cursor, (delivery, attempts) in page.items
            ],
            page_info=PageInfo.of(page),
            has_next_page=page.has_next_page,
            end_cursor=page.end_cursor,
        )


def _delivery(delivery: models.Delivery, attempts: list[models.Attempt]) -> WebhookDelivery:
    return WebhookDelivery(
        id=strawberry.ID(str(delivery.id)),
        event_id=delivery.event_id,
        event_type=delivery.event_type,
        status=delivery.status,
        job_id=strawberry.ID(to_global_id("Job", delivery.job_id)) if delivery.job_id else None,
        created_at=delivery.created_at,
        finished_at=delivery.finished_at,
        attempts=[
            WebhookAttempt(
                attempt=a.attempt,
                at=a.at,
                outcome=a.outcome,
                status_code=a.status_code,
                failure_class=a.failure_class,
                code=a.code,
                duration_ms=a.duration_ms,
                response_excerpt=a.response_excerpt,
            )
            for a in attempts
        ],
    )


@strawberry.input
class CreateWebhookInput:
    url: str = strawberry.field(description="http(s); private addresses are refused")
    event_types: list[str] = strawberry.field(
        description="Exact types (note.created), families (note.*, job.*) or *"
    )
    secret: str | None = strawberry.field(
        default=None, description="16-256 characters; leave out to have one generated"
    )
    description: str | None = None


async def _admin_memory(info: Info) -> str:
    memory = await info.context.memory()
    await info.context.authorize(Action.ADMIN, Resource.of_memory(memory))
    return memory


@strawberry.type
class WebhookQuery:
    @strawberry.field(description="This memory's webhooks (memory admins)")
    async def webhooks(self, info: Info) -> list[Webhook]:
        memory = await _admin_memory(info)
        return [Webhook.from_model(h) for h in await info.context.services.webhooks.list(memory)]

    @strawberry.field(description="A webhook of this memory by id (memory admins)")
    async def webhook(self, info: Info, id: strawberry.ID) -> Webhook | None:
        memory = await _admin_memory(info)
        hook = await info.context.services.webhooks.get(memory, parse_id(id, "Webhook"))
        return None if hook is None else Webhook.from_model(hook)


@strawberry.type
class WebhookMutation:
    @strawberry.mutation(description="Send this memory's events of the given types to a URL")
    async def create_webhook(self, info: Info, input: CreateWebhookInput) -> Webhook:
        memory = await _admin_memory(info)
        hook, secret = await info.context.services.webhooks.create(
            memory,
            url=input.url,
            event_types=input.event_types,
            secret=input.secret,
            description=input.description,
            actor=info.context.caller.sub,
        )
        return Webhook.from_model(hook, secret)

    @strawberry.mutation(description="Stop a webhook; its pending deliveries are dropped")
    async def delete_webhook(self, info: Info, id: strawberry.ID) -> bool:
        memory = await _admin_memory(info)
        try:
            await info.context.services.webhooks.delete(memory, parse_id(id, "Webhook"))
        except NotFound:
            raise NotFound(f"No webhook {id} in this memory", id=str(id)) from None
        return True
