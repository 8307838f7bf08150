"""A policy change reaches open WebSockets: subscriptions and later operations on them
decide under the policies in force, not those of the moment they started."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection

from fortemi.app import create_app
from fortemi.auth.access import Authorizer
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.auth.policy import (
    AccessDecisionEngine,
    CompositePolicyProvider,
    DatabasePolicyProvider,
    FilePolicyProvider,
    PolicyService,
    RedisCachedPolicyProvider,
)
from fortemi.runtime import Runtime
from tests.support import graphql_ws as ws_client
from tests.support.live import serve

pytestmark = pytest.mark.live

NOTE_FEED = "subscription { noteEvents { type entityId payload } }"
# p1 and the memory itself, closed to all but the platform team (dana, not alice).
PLATFORM_ONLY: dict[str, Any] = {
    "version": 1,
    "access_level": "group",
    "allowed_groups": ["platform-team"],
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}, "delete": {"required_role": "editor"}},
}


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


async def _first_event(
    ws: ClientConnection, op: str, provoke: Callable[[], Awaitable[object]]
) -> dict[str, Any]:
    """The first message of subscription ``op``, provoking until one comes: the server
    starts listening asynchronously (at most 20 rounds of a second or more each)."""
    for _ in range(20):
        await provoke()
        try:
            return await ws_client.next_of(ws, op, wait=1)
        except TimeoutError:
            continue
    raise AssertionError(f"subscription {op} never delivered")


async def _end_of(ws: ClientConnection, op: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The message ending subscription ``op`` and the one after it; events delivered
    before the change took effect (still in flight) are skipped."""
    while (message := await ws_client.next_of(ws, op))["type"] == "next":
        if message["payload"].get("errors"):
            return message, await ws_client.next_of(ws, op)
    return message, message


async def _restrict(runtime: Runtime, memory: str, kind: str, name: str) -> None:
    document = {**PLATFORM_ONLY, kind: name}
    await runtime.policies.put(kind, memory, name, document, actor="test")


async def test_note_events_of_a_project_the_subscriber_lost_are_no_longer_delivered(
    live_server: str, runtime: Runtime, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    async with (
        httpx.AsyncClient(base_url=f"http://{live_server}") as http,
        ws_client.socket(live_server, user_token, memory) as ws,
    ):
        await ws_client.subscribe(ws, "feed", NOTE_FEED)
        before = await _first_event(
            ws, "feed", lambda: _create(http, dana, memory, title="open", project="p1")
        )
        assert before["payload"]["data"]["noteEvents"]["payload"]["project"] == "p1"
        await _restrict(runtime, memory, "project", "p1")
        closed = await _create(http, dana, memory, title="closed now", project="p1")
        still_open = await _create(http, dana, memory, title="still open", project="p2")
        # Events arrive in order: the p1 note's would come before the p2 note's.
        delivered: list[str] = []
        while still_open not in delivered:
            message = await ws_client.next_of(ws, "feed")
            delivered.append(message["payload"]["data"]["noteEvents"]["entityId"])
    assert closed not in delivered


async def test_note_events_end_with_not_found_once_the_memory_is_no_longer_readable(
    live_server: str, runtime: Runtime, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    async with (
        httpx.AsyncClient(base_url=f"http://{live_server}") as http,
        ws_client.socket(live_server, user_token, memory) as ws,
    ):
        await ws_client.subscribe(ws, "feed", NOTE_FEED)
        await _first_event(ws, "feed", lambda: _create(http, dana, memory, title="open"))
        await _restrict(runtime, memory, "memory", memory)
        await _create(http, dana, memory, title="closed now")
        ended, last = await _end_of(ws, "feed")
    assert ended["payload"]["data"] is None
    assert [e["extensions"]["code"] for e in ended["payload"]["errors"]] == ["NOT_FOUND"]
    assert last == {"id": "feed", "type": "complete"}


async def test_a_silent_note_feed_ends_with_not_found_once_the_memory_is_closed(
    live_server: str, runtime: Runtime, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    async with (
        httpx.AsyncClient(base_url=f"http://{live_server}") as http,
        ws_client.socket(live_server, user_token, memory) as ws,
    ):
        await ws_client.subscribe(ws, "feed", NOTE_FEED)
        await _first_event(ws, "feed", lambda: _create(http, dana, memory, title="open"))
        await _restrict(runtime, memory, "memory", memory)
        # No event follows: the stream learns of the change while it waits.
        ended, last = await _end_of(ws, "feed")
    assert [e["extensions"]["code"] for e in ended["payload"]["errors"]] == ["NOT_FOUND"]
    assert last == {"id": "feed", "type": "complete"}


async def test_job_events_end_with_not_found_once_the_memory_is_no_longer_readable(
    live_server: str, runtime: Runtime, issuer: LocalIssuer, user_token: str, memory: str
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    async with (
        httpx.AsyncClient(base_url=f"http://{live_server}") as http,
        ws_client.socket(live_server, user_token, memory) as ws,
    ):

        async def purge_job() -> None:
            """A job.created event: a note deleted, then purged (no worker runs here)."""
            note_id = await _create(http, user_token, memory, title="doomed")
            for mutation in ("deleteNote(id: $id) { id }", "purgeNotes(ids: [$id]) { id }"):
                response = await http.post(
                    "/graphql",
                    json={"query": f"mutation($id: ID!) {{ {mutation} }}",
                          "variables": {"id": note_id}},
                    headers={"Authorization": f"Bearer {user_token}",
                             "X-Fortemi-Memory": memory},
                )  # fmt: skip
                assert "errors" not in response.json(), response.json()

        await ws_client.subscribe(ws, "jobs", "subscription { jobEvents { type } }")
        await _first_event(ws, "jobs", purge_job)
        await _restrict(runtime, memory, "memory", memory)
        # Any event on the bus is preceded by the fresh decision, a note's too.
        await _create(http, dana, memory, title="closed now")
        ended, last = await _end_of(ws, "jobs")
    assert ended["payload"]["data"] is None
    assert [e["extensions"]["code"] for e in ended["payload"]["errors"]] == ["NOT_FOUND"]
    assert last == {"id": "jobs", "type": "complete"}


async def test_a_later_query_on_an_open_socket_reads_under_the_new_policies(
    live_server: str, runtime: Runtime, user_token: str, memory: str
) -> None:
    count = "{ notes { totalCount } }"
    async with ws_client.socket(live_server, user_token, memory) as ws:
        await ws_client.execute(
            ws, "1", 'mutation { createNote(input: {title: "t", project: "p1"}) { id } }'
        )
        assert await ws_client.execute(ws, "2", count) == {"notes": {"totalCount": 1}}
        await _restrict(runtime, memory, "project", "p1")
        assert await ws_client.execute(ws, "3", count) == {"notes": {"totalCount": 0}}


@dataclasses.dataclass
class OwnPolicies:
    address: str
    default_yaml: Path
    provider: RedisCachedPolicyProvider


@pytest.fixture
async def own_policies(runtime: Runtime, tmp_path: Path) -> AsyncIterator[OwnPolicies]:
    """The app over a copy of the policy directory that the test may edit, on its own
    port. Policies reload as in production (announced through Redis), on a counter of
    its own so no other test's processes reload."""
    directory = tmp_path / "policies"
    shutil.copytree(runtime.settings.policy_path, directory)
    key = f"fortemi:test:{tmp_path.name}:generation"
    files, stored = FilePolicyProvider(directory), DatabasePolicyProvider(runtime.db)
    provider = RedisCachedPolicyProvider(
        CompositePolicyProvider(files, stored), runtime.redis, key=key
    )
    policies = PolicyService(files, stored, provider)
    await policies.reload()
    services = dataclasses.replace(
        runtime.services,
        policies=policies,
        authorizer=Authorizer(AccessDecisionEngine(), policies, runtime.audit),
    )
    variant = dataclasses.replace(runtime, services=services)
    async with serve(create_app(variant)) as address:
        yield OwnPolicies(address, directory / "default.yaml", provider)
    await runtime.redis.delete(key)


async def test_the_audit_feed_ends_with_forbidden_for_an_auditor_no_longer_admitted(
    live_server: str, issuer: LocalIssuer, own_policies: OwnPolicies
) -> None:
    auditor = issuer.mint("ivy-revoked", roles=["auditor"])
    sam = issuer.mint("sam-revoked", roles=["viewer"])
    feed = 'subscription { auditEvents(filter: {userId: "sam-revoked"}) { userId } }'
    async with (
        httpx.AsyncClient(base_url=f"http://{live_server}") as http,
        ws_client.socket(own_policies.address, auditor) as ws,
    ):

        async def provoke() -> None:
            await http.post(
                "/graphql",
                json={"query": "{ notes { totalCount } }"},
                headers={"Authorization": f"Bearer {sam}"},
            )

        await ws_client.subscribe(ws, "feed", feed)
        seen = await _first_event(ws, "feed", provoke)
        assert seen["payload"]["data"] == {"auditEvents": {"userId": "sam-revoked"}}
        text = own_policies.default_yaml.read_text()
        assert "roles: [auditor]" in text
        own_policies.default_yaml.write_text(
            text.replace("roles: [auditor]", "roles: [chief-auditor]")
        )
        await own_policies.provider.invalidate()
        await provoke()
        ended, last = await _end_of(ws, "feed")
    assert ended["payload"]["data"] is None
    assert [e["extensions"]["code"] for e in ended["payload"]["errors"]] == ["FORBIDDEN"]
    assert last == {"id": "feed", "type": "complete"}


async def test_the_audit_feed_ends_when_a_renewal_token_drops_the_auditor_role(
    live_server: str, issuer: LocalIssuer
) -> None:
    auditor = issuer.mint("ivy-renewed", roles=["auditor"])
    sam = issuer.mint("sam-renewed", roles=["viewer"])
    feed = 'subscription { auditEvents(filter: {userId: "sam-renewed"}) { userId } }'
    async with (
        httpx.AsyncClient(base_url=f"http://{live_server}") as http,
        ws_client.socket(live_server, auditor) as ws,
    ):

        async def provoke() -> None:
            await http.post(
                "/graphql",
                json={"query": "{ notes { totalCount } }"},
                headers={"Authorization": f"Bearer {sam}"},
            )

        await ws_client.subscribe(ws, "feed", feed)
        await _first_event(ws, "feed", provoke)
        await ws_client.ping(ws, issuer.mint("ivy-renewed", roles=["viewer"]))
        ended, last = await _end_of(ws, "feed")
    assert [e["extensions"]["code"] for e in ended["payload"]["errors"]] == ["FORBIDDEN"]
    assert last == {"id": "feed", "type": "complete"}
