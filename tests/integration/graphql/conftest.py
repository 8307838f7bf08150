"""The real app over the session's PostgreSQL and Redis, reached through real HTTP clients."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import parse_note_id
from fortemi.platform.jobs.models import Tier
from fortemi.platform.settings import Settings
from fortemi.retrieval.indexing import Chunking, embedding_job_type
from fortemi.runtime import Runtime
from tests.integration.retrieval.conftest import run_embedding
from tests.support.homelab import vault_items


@pytest.fixture(scope="session")
async def runtime(settings: Settings, service_urls: ServiceUrls) -> AsyncIterator[Runtime]:
    rt = await Runtime.open(settings, service_urls)
    yield rt
    await rt.close()


# Policies for each test's own memory (a real deployment sets them through createMemory or
# setPolicy): any authenticated viewer reads, editors write and delete. The generic test
# projects get the same, so tests about notes are not tests about policy.
OPEN_POLICY: dict[str, Any] = {
    "version": 1,
    "access_level": "public",
    "required_role": "viewer",
    "actions": {
        "write": {"required_role": "editor"},
        "delete": {"required_role": "editor"},
        "admin": {"required_role": "admin"},
    },
}
TEST_PROJECTS = ("p1", "p2")

_names = itertools.count()


async def open_memory(runtime: Runtime) -> str:
    """Create a memory with the open test policies; the caller drops it."""
    name = f"g{os.getpid()}_{next(_names)}"
    await runtime.memories.create(name, created_by="test")
    store = runtime.policies
    await store.put("memory", name, name, {**OPEN_POLICY, "memory": name}, actor="test")
    for project in TEST_PROJECTS:
        await store.put("project", name, project, {**OPEN_POLICY, "project": project}, actor="test")
    return name


@pytest.fixture
async def memory(runtime: Runtime) -> AsyncIterator[str]:
    """A fresh memory with open test policies, dropped afterwards."""
    name = await open_memory(runtime)
    yield name
    await runtime.memories.delete(name, confirm=name)


@pytest.fixture(scope="session")
def app(runtime: Runtime) -> Starlette:
    return create_app(runtime)


@pytest.fixture(scope="session")
def issuer(runtime: Runtime) -> LocalIssuer:
    assert runtime.issuer is not None
    return runtime.issuer


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as c:
        yield c


@pytest.fixture(scope="session")
def admin_token(issuer: LocalIssuer) -> str:
    return issuer.mint("root", roles=["admin"])


@pytest.fixture(scope="session")
def user_token(issuer: LocalIssuer) -> str:
    return issuer.mint("alice", groups=["data-team"], roles=["editor"])


class GraphQLCall(Protocol):
    def __call__(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        token: str | None = ...,
        memory: str | None = ...,
    ) -> Awaitable[dict[str, Any]]: ...


@pytest.fixture
def gql(client: httpx.AsyncClient, user_token: str, memory: str) -> GraphQLCall:
    """POST one operation as alice (editor) in the test's own memory; returns the JSON body."""

    async def call(
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        token: str | None = user_token,
        memory: str | None = memory,
    ) -> dict[str, Any]:
        headers = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if memory is not None:
            headers["X-Fortemi-Memory"] = memory
        response = await client.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        body: dict[str, Any] = response.json()
        return body

    return call


def error_codes(body: dict[str, Any]) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors") or []]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
async def live_server(app: Starlette) -> AsyncIterator[str]:
    """The same app served by uvicorn on a loopback port, in the session's event loop."""
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    # pytest owns SIGINT; uvicorn must not capture it for the length of the session.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    await task


CreateNote = Callable[..., Awaitable[dict[str, Any]]]


# Policies of the homelab vault's resources that the suite's fixture policies do not set
# (poimen and the two restricted skills come from tests/data/policies, as in every memory).
HOMELAB_PUBLIC = ("rust-guide", "ai-infra", "empty-project")


@pytest.fixture(scope="module")
async def homelab(runtime: Runtime, app: Starlette, issuer: LocalIssuer) -> AsyncIterator[str]:
    """A memory holding the homelab vault, synced as a vault sync stores it, embedded."""
    name = f"homelab_{uuid.uuid4().hex[:10]}"
    await runtime.memories.create(name, created_by="test")
    store = runtime.policies
    await store.put("memory", name, name, {**OPEN_POLICY, "memory": name}, actor="test")
    for project in HOMELAB_PUBLIC:
        await store.put("project", name, project, {**OPEN_POLICY, "project": project}, actor="t")
    # Skill policies are shared by every memory: this one is removed again at the end.
    testing = {**OPEN_POLICY, "skill": "SKILL-testing"}
    await store.put("skill", None, "SKILL-testing", testing, actor="t")
    loader = issuer.mint(
        "vault-loader",
        groups=["platform-team", "ml-team"],
        roles=["editor"],
        permissions=["skill:read", "skill:write"],
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        response = await client.post(
            "/graphql",
            json={
                "query": "mutation($i: UpsertExternalNotesInput!) {"
                " upsertExternalNotes(input: $i) { results { outcome note { id } } } }",
                "variables": {"i": {"source": "vault:homelab", "items": vault_items()}},
            },
            headers={"Authorization": f"Bearer {loader}", "X-Fortemi-Memory": name},
        )
    body = response.json()
    assert "errors" not in body, body
    settings = runtime.settings
    job_type = embedding_job_type(
        runtime.db,
        runtime.backend,
        Chunking(size=settings.chunk_size, overlap=settings.chunk_overlap),
        tier=Tier.CPU,
    )
    for result in body["data"]["upsertExternalNotes"]["results"]:
        note_id = parse_note_id(result["note"]["id"])
        assert (await run_embedding(job_type, name, note_id)).kind == "success"
    yield name
    await runtime.memories.delete(name, confirm=name)
    await store.delete("skill", None, "SKILL-testing")
