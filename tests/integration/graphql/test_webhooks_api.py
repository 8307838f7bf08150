"""Webhooks end to end: GraphQL registers them, the fan-out and a real worker deliver
signed POSTs to a real receiver on loopback, and every attempt is queryable."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import parse_id
from fortemi.platform.jobs.backoff import Backoff
from fortemi.platform.jobs.models import FailureClass, Tier
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime, job_registry
from fortemi.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from fortemi.workers.pool import WorkerPool
from fortemi.workers.runtime import WorkerConfig
from tests.integration.graphql.conftest import GraphQLCall, _free_port, error_codes

pytestmark = pytest.mark.live

POLLS, POLL_SECONDS = 600, 0.05


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 that records what it gets. Paths: ``/ok`` answers
    200; ``/flaky`` 503 to each delivery's first two attempts, then 200; ``/gone`` 410.

    ``/flaky`` counts per delivery (its ``X-Fortemi-Delivery`` header), not per path: a
    webhook on ``note.*`` also gets the note's ``concepts_changed``, whose attempts would
    otherwise take the 503s meant for ``note.created`` whenever it arrives first."""

    base: str = ""
    received: dict[str, list[tuple[dict[str, str], bytes]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    async def endpoint(self, request: Request) -> Response:
        path = request.path_params["path"]
        self.received[path].append((dict(request.headers), await request.body()))
        if path == "gone":
            return Response("gone for good", status_code=410)
        if path == "flaky" and self._attempts(path, request.headers["x-fortemi-delivery"]) <= 2:
            return Response("try later", status_code=503)
        return Response("thanks")

    def _attempts(self, path: str, delivery: str) -> int:
        return sum(
            1 for headers, _ in self.received[path] if headers["x-fortemi-delivery"] == delivery
        )

    async def wait_for(self, path: str, count: int) -> list[tuple[dict[str, str], bytes]]:
        for _ in range(POLLS):
            if len(self.received[path]) >= count:
                return self.received[path]
            await asyncio.sleep(POLL_SECONDS)
        pytest.fail(f"{path} got {len(self.received[path])} of {count} deliveries")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = Starlette(routes=[Route("/{path}", found.endpoint, methods=["POST"])])
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    found.base = f"http://127.0.0.1:{port}"
    yield found
    server.should_exit = True
    await task


@pytest.fixture
async def worker(
    runtime: Runtime, settings: Settings, service_urls: ServiceUrls
) -> AsyncIterator[None]:
    """A real worker pool on the session's broker, with quick retries."""
    config = WorkerConfig.from_settings(
        settings,
        service_urls.database,
        registry=job_registry(settings),
        redis_url=service_urls.redis,
        backoff=Backoff(base_seconds={c: 0.1 for c in FailureClass}, jitter=0.0),
        maintenance_interval_seconds=0.5,
        grace_seconds=1.0,
    )
    pool = WorkerPool(runtime.broker, config)
    await asyncio.to_thread(pool.start, [Tier.CPU], 1)
    yield
    await asyncio.to_thread(pool.stop)


CREATE = """mutation($i: CreateWebhookInput!) {
  createWebhook(input: $i) { id url eventTypes signingSecret createdBy memory }
}"""
DELIVERIES = """query($id: ID!) { webhook(id: $id) { deliveries(first: 50) { edges { node {
  eventType status jobId attempts { attempt outcome statusCode failureClass code }
} } } } }"""


async def _create_webhook(
    gql: GraphQLCall, token: str, url: str, types: list[str], **extra: Any
) -> dict[str, Any]:
    body = await gql(CREATE, {"i": {"url": url, "eventTypes": types, **extra}}, token=token)
    assert "errors" not in body, body
    hook: dict[str, Any] = body["data"]["createWebhook"]
    return hook


async def _note(gql: GraphQLCall, title: str) -> str:
    body = await gql(
        "mutation($t: String!) { createNote(input: {title: $t}) { id } }", {"t": title}
    )
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


async def _deliveries(gql: GraphQLCall, token: str, hook_id: str) -> list[dict[str, Any]]:
    body = await gql(DELIVERIES, {"id": hook_id}, token=token)
    assert "errors" not in body, body
    return [edge["node"] for edge in body["data"]["webhook"]["deliveries"]["edges"]]


async def _settled(
    gql: GraphQLCall, token: str, hook_id: str, count: int, event_type: str | None = None
) -> list[dict[str, Any]]:
    """The webhook's deliveries (of ``event_type``, if given) once ``count`` of them are no
    longer pending."""
    for _ in range(POLLS):
        found = [
            d
            for d in await _deliveries(gql, token, hook_id)
            if event_type is None or d["eventType"] == event_type
        ]
        if sum(d["status"] != "pending" for d in found) >= count:
            return found
        await asyncio.sleep(POLL_SECONDS)
    pytest.fail(f"fewer than {count} deliveries settled: {found}")


async def test_a_webhook_gets_signed_posts_of_the_event_types_it_asked_for(
    gql: GraphQLCall, admin_token: str, memory: str, receiver: Receiver, worker: None
) -> None:
    hook = await _create_webhook(gql, admin_token, f"{receiver.base}/ok", ["note.created"])
    secret = hook["signingSecret"]
    assert len(secret or "") >= 32
    assert (hook["memory"], hook["createdBy"]) == (memory, "root")

    first = await _note(gql, "first")
    await gql("mutation($id: ID!) { updateNote(id: $id, input: {title: \"x\"}) { id } }",
              {"id": first})  # fmt: skip
    second = await _note(gql, "second")
    got = await receiver.wait_for("ok", 2)

    bodies = [json.loads(body) for _, body in got]
    assert [(b["type"], b["entityId"]) for b in bodies] == [
        ("note.created", first),
        ("note.created", second),
    ]
    assert bodies[0]["memory"] == memory
    for headers, body in got:
        assert verify(
            secret.encode(),
            timestamp=headers[TIMESTAMP_HEADER.lower()],
            signature=headers[SIGNATURE_HEADER.lower()],
            body=body,
            now=time.time(),
        )
        assert headers["x-fortemi-event"] == "note.created"
        assert headers["content-type"] == "application/json"
    # A signature made with another secret does not verify.
    headers, body = got[0]
    assert not verify(b"not-the-secret-at-all", timestamp=headers[TIMESTAMP_HEADER.lower()],
                      signature=headers[SIGNATURE_HEADER.lower()], body=body, now=time.time())  # fmt: skip

    # The update was never wanted, so it has no delivery; the two creations were delivered.
    deliveries = await _settled(gql, admin_token, hook["id"], 2)
    assert sorted(d["eventType"] for d in deliveries) == ["note.created", "note.created"]
    assert all(d["status"] == "delivered" for d in deliveries)
    assert all(d["attempts"] == [{"attempt": 1, "outcome": "delivered", "statusCode": 200,
                                  "failureClass": None, "code": None}]
               for d in deliveries)  # fmt: skip


async def test_failed_attempts_are_retried_with_backoff_and_each_is_recorded(
    gql: GraphQLCall, admin_token: str, receiver: Receiver, worker: None
) -> None:
    flaky = await _create_webhook(gql, admin_token, f"{receiver.base}/flaky", ["note.*"])
    gone = await _create_webhook(gql, admin_token, f"{receiver.base}/gone", ["note.created"],
                                 secret="a-secret-of-my-own-choosing")  # fmt: skip
    assert gone["signingSecret"] is None  # a chosen secret is never echoed
    await _note(gql, "once")

    # note.* also matches the note's concepts_changed, which its tagging job publishes.
    [delivered] = await _settled(gql, admin_token, flaky["id"], 1, "note.created")
    assert delivered["status"] == "delivered"
    assert [(a["outcome"], a["statusCode"], a["failureClass"], a["code"])
            for a in delivered["attempts"]] == [
        ("retry", 503, "transient", "http_503"),
        ("retry", 503, "transient", "http_503"),
        ("delivered", 200, None, None),
    ]  # fmt: skip

    [refused] = await _settled(gql, admin_token, gone["id"], 1)
    assert refused["status"] == "failed"
    assert [(a["outcome"], a["statusCode"], a["code"]) for a in refused["attempts"]] == [
        ("failed", 410, "http_410")
    ]
    job = await gql("query($id: ID!) { job(id: $id) { status failureClass failureCode } }",
                    {"id": refused["jobId"]}, token=admin_token)  # fmt: skip
    assert job["data"]["job"] == {
        "status": "FAILED",
        "failureClass": "permanent",
        "failureCode": "http_410",
    }


async def _job_deliveries(runtime: Runtime, hook_id: str) -> list[dict[str, Any]]:
    """The event bodies delivered (or due) to a webhook, as stored."""
    async with runtime.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT d.body FROM public.webhook_delivery d JOIN public.webhook w "
            "ON w.id = d.webhook_id WHERE w.id = $1",
            parse_id(hook_id, "Webhook"),
        )
    return [json.loads(bytes(row["body"])) for row in rows]


async def test_delivery_jobs_own_events_are_never_fanned_out(
    gql: GraphQLCall, admin_token: str, receiver: Receiver, worker: None, runtime: Runtime
) -> None:
    jobs_hook = await _create_webhook(gql, admin_token, f"{receiver.base}/ok", ["job.*"])

    async def completed_embeddings(count: int) -> None:
        for _ in range(POLLS):
            bodies = await _job_deliveries(runtime, jobs_hook["id"])
            done = [
                b
                for b in bodies
                if b["type"] == "job.completed" and b["payload"]["jobType"] == "Embedding"
            ]
            if len(done) >= count:
                return
            await asyncio.sleep(POLL_SECONDS)
        pytest.fail(f"fewer than {count} job.completed deliveries")

    await _note(gql, "one")  # its Embedding job's events are deliveries for this hook
    await completed_embeddings(1)
    # Those deliveries ran as WebhookDelivery jobs whose own events came next on the
    # stream; a second note's job events come after them, so once those are fanned out,
    # the delivery jobs' events have been seen (and skipped) too.
    await _note(gql, "two")
    await completed_embeddings(2)
    bodies = await _job_deliveries(runtime, jobs_hook["id"])
    # Every note job's events (a note also enqueues concept tagging), none of a delivery's.
    types = {b["payload"]["jobType"] for b in bodies}
    assert "Embedding" in types
    assert "WebhookDelivery" not in types


async def test_a_deleted_webhook_gets_nothing_more(
    gql: GraphQLCall, admin_token: str, receiver: Receiver, worker: None
) -> None:
    doomed = await _create_webhook(gql, admin_token, f"{receiver.base}/ok", ["note.created"])
    await _note(gql, "one")
    await _settled(gql, admin_token, doomed["id"], 1)
    marker = await _create_webhook(gql, admin_token, f"{receiver.base}/flaky", ["note.created"])
    deleted = await gql("mutation($id: ID!) { deleteWebhook(id: $id) }", {"id": doomed["id"]},
                        token=admin_token)  # fmt: skip
    assert deleted["data"] == {"deleteWebhook": True}
    await _note(gql, "two")
    await _settled(gql, admin_token, marker["id"], 1)  # "two" has been fanned out...
    assert len(receiver.received["ok"]) == 1  # ...but not to the deleted hook
    gone = await gql("query($id: ID!) { webhook(id: $id) { id } }", {"id": doomed["id"]},
                     token=admin_token)  # fmt: skip
    assert gone["data"] == {"webhook": None}
    again = await gql("mutation($id: ID!) { deleteWebhook(id: $id) }", {"id": doomed["id"]},
                      token=admin_token)  # fmt: skip
    assert error_codes(again) == ["NOT_FOUND"]


@pytest.mark.parametrize(
    ("url", "types", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data", ["note.*"], "webhook_target_private"),
        ("http://10.1.2.3/hook", ["note.*"], "webhook_target_private"),
        ("http://[::ffff:192.168.0.1]/hook", ["note.*"], "webhook_target_private"),
        ("ftp://example.com/hook", ["note.*"], "webhook_url_scheme"),
        ("http://user:pw@127.0.0.1/hook", ["note.*"], "webhook_url_credentials"),
        ("http://127.0.0.1/hook", ["note.exploded!"], None),
        ("http://127.0.0.1/hook", ["audit.*"], None),
    ],
)
async def test_bad_targets_and_event_types_are_refused_before_anything_is_stored(
    gql: GraphQLCall, admin_token: str, url: str, types: list[str], reason: str | None
) -> None:
    body = await gql(CREATE, {"i": {"url": url, "eventTypes": types}}, token=admin_token)
    assert error_codes(body) == ["BAD_USER_INPUT"]
    if reason is not None:
        assert body["errors"][0]["extensions"]["reason"] == reason
    listed = await gql("{ webhooks { id } }", token=admin_token)
    assert listed["data"] == {"webhooks": []}


async def test_only_memory_admins_manage_or_see_webhooks(
    gql: GraphQLCall, admin_token: str, receiver: Receiver
) -> None:
    await _create_webhook(gql, admin_token, f"{receiver.base}/ok", ["note.*"])
    as_editor = await gql(CREATE, {"i": {"url": f"{receiver.base}/ok", "eventTypes": ["*"]}})
    assert error_codes(as_editor) == ["FORBIDDEN"]
    assert error_codes(await gql("{ webhooks { id url } }")) == ["FORBIDDEN"]
    listed = await gql("{ webhooks { url signingSecret } }", token=admin_token)
    # The secret is shown once, at creation; never in a list.
    assert listed["data"] == {"webhooks": [{"url": f"{receiver.base}/ok", "signingSecret": None}]}
