"""Long work from a tool: a job, followed with progress notifications until it ends."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest

from fortemi.platform.events import Event
from fortemi.runtime import Runtime
from tests.integration.mcp.conftest import connect, structured

pytestmark = pytest.mark.live


async def _graphql(base: str, token: str, memory: str, query: str, variables: Any) -> Any:
    async with httpx.AsyncClient(base_url=base) as http:
        response = await http.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
        )
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


async def _pending_job(base: str, token: str, memory: str) -> str:
    """A purge job; no worker runs in these tests, so it stays pending until cancelled."""
    created = await _graphql(
        base, token, memory, 'mutation { createNote(input: {title: "doomed"}) { id } }', {}
    )
    note_id = created["createNote"]["id"]
    await _graphql(
        base, token, memory, "mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": note_id}
    )
    purged = await _graphql(
        base, token, memory, "mutation($ids: [ID!]!) { purgeNotes(ids: $ids) { id } }",
        {"ids": [note_id]},
    )  # fmt: skip
    job_id: str = purged["purgeNotes"]["id"]
    return job_id


async def test_job_status_waits_for_the_end_with_progress_notifications(
    mcp_base: str, user_token: str, memory: str, runtime: Runtime
) -> None:
    job_id = await _pending_job(mcp_base, user_token, memory)
    notified: list[tuple[float, str | None]] = []
    heard = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notified.append((progress, message))
        heard.set()

    async with connect(mcp_base, user_token, memory) as client:
        now = await client.call_tool("job_status", {"id": job_id})
        waiting = asyncio.create_task(
            client.call_tool(
                "job_status", {"id": job_id, "waitSeconds": 120}, progress_callback=on_progress
            )
        )
        # What a worker announces as it goes, until the waiting call has heard it.
        while not heard.is_set():
            await runtime.services.events.publish(
                Event(
                    type="job.progress",
                    entity_type="job",
                    entity_id=job_id,
                    memory=memory,
                    payload={"progress": 40, "progressMessage": "halfway"},
                )
            )
            with contextlib.suppress(TimeoutError):  # a poll interval, not a limit
                await asyncio.wait_for(heard.wait(), 0.2)
        assert not waiting.done()
        await _graphql(
            mcp_base, user_token, memory,
            "mutation($id: ID!) { cancelJob(id: $id) { status } }", {"id": job_id},
        )  # fmt: skip
        ended = await waiting
    assert structured(now)["job"]["status"] == "PENDING"
    assert structured(ended)["job"]["status"] == "CANCELLED"
    assert notified[0] == (40.0, "halfway")
