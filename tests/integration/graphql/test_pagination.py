"""Every list is a Relay connection whose PageInfo tells the truth on every page.

Each list gets five or more items, is read whole once, then page by page (two items a
page): the first page has nothing before it, a middle page has items on both sides, the
last page nothing after it, and every page holds exactly the slice of the whole list
its cursor names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.events import Event
from fortemi.platform.jobs.models import JobSpec
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall

PAGE_SIZE = 2
PAGE_INFO = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"


@dataclass(frozen=True)
class Listing:
    """How to read one list: the operation (``$first``, ``$after``), who asks, and where
    in the answer the connection is."""

    query: str
    token: str
    path: tuple[str, ...]
    variables: dict[str, Any]

    def connection(self, body: dict[str, Any]) -> dict[str, Any]:
        assert "errors" not in body, body
        found: dict[str, Any] = body["data"]
        for key in self.path:
            found = found[key]
        return found


Setup = Callable[[GraphQLCall, Runtime, LocalIssuer, str, str], Awaitable[Listing]]


NOTES = f"""query($first: Int, $after: String) {{
  notes(first: $first, after: $after) {{ edges {{ cursor node {{ id }} }} {PAGE_INFO} }}
}}"""


async def _create_notes(gql: GraphQLCall, count: int) -> None:
    for i in range(count):
        created = await gql(
            "mutation($t: String!) { createNote(input: {title: $t}) { id } }", {"t": f"n{i}"}
        )
        assert "errors" not in created, created


async def _notes(
    gql: GraphQLCall, runtime: Runtime, issuer: LocalIssuer, memory: str, admin: str
) -> Listing:
    await _create_notes(gql, 5)
    return Listing(NOTES, admin, ("notes",), {})


async def _jobs(
    gql: GraphQLCall, runtime: Runtime, issuer: LocalIssuer, memory: str, admin: str
) -> Listing:
    for _ in range(5):
        await runtime.jobs.submit(
            JobSpec(type="PurgeNote", memory=memory, payload={"note_ids": [str(uuid4())]})
        )
    query = f"""query($first: Int, $after: String) {{
      jobs(filter: {{type: "PurgeNote"}}, first: $first, after: $after) {{
        edges {{ cursor node {{ id }} }} {PAGE_INFO}
      }}
    }}"""
    return Listing(query, admin, ("jobs",), {})


async def _audit_entries(
    gql: GraphQLCall, runtime: Runtime, issuer: LocalIssuer, memory: str, admin: str
) -> Listing:
    user = f"pager-{uuid4().hex[:12]}"
    token = issuer.mint(user, roles=["viewer"])
    for _ in range(5):
        read = await gql("{ notes { totalCount } }", token=token)
        assert "errors" not in read, read
    query = f"""query($first: Int, $after: String, $user: String) {{
      auditLog(filter: {{userId: $user}}, first: $first, after: $after) {{
        edges {{ cursor node {{ id }} }} {PAGE_INFO}
      }}
    }}"""
    auditor = issuer.mint("pia-auditor", roles=["auditor"])
    return Listing(query, auditor, ("auditLog",), {"user": user})


async def _webhook_deliveries(
    gql: GraphQLCall, runtime: Runtime, issuer: LocalIssuer, memory: str, admin: str
) -> Listing:
    created = await gql(
        """mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { id } }""",
        {"i": {"url": "http://127.0.0.1:9/hook", "eventTypes": ["note.*"]}},
        token=admin,
    )
    assert "errors" not in created, created
    # One fan-out, one transaction: the deliveries share created_at, so pages turn on ids.
    await runtime.services.webhooks.fan_out(
        [
            Event(
                type="note.created",
                entity_type="note",
                entity_id=f"n{i}",
                memory=memory,
                id=f"1-{i}",
            )
            for i in range(5)
        ]
    )
    query = f"""query($first: Int, $after: String, $hook: ID!) {{
      webhook(id: $hook) {{
        deliveries(first: $first, after: $after) {{
          edges {{ cursor node {{ id }} }} {PAGE_INFO} hasNextPage endCursor
        }}
      }}
    }}"""
    hook = created["data"]["createWebhook"]["id"]
    return Listing(query, admin, ("webhook", "deliveries"), {"hook": hook})


LISTS: dict[str, Setup] = {
    "notes": _notes,
    "jobs": _jobs,
    "auditLog": _audit_entries,
    "webhook deliveries": _webhook_deliveries,
}


async def _read(
    gql: GraphQLCall, listing: Listing, first: int, after: str | None
) -> dict[str, Any]:
    variables = {**listing.variables, "first": first, "after": after}
    return listing.connection(await gql(listing.query, variables, token=listing.token))


@pytest.mark.parametrize("setup", LISTS.values(), ids=LISTS.keys())
async def test_every_page_of_every_list_tells_what_lies_before_and_after_it(
    gql: GraphQLCall,
    runtime: Runtime,
    issuer: LocalIssuer,
    memory: str,
    admin_token: str,
    setup: Setup,
) -> None:
    listing = await setup(gql, runtime, issuer, memory, admin_token)
    whole = await _read(gql, listing, 100, None)
    cursors = [edge["cursor"] for edge in whole["edges"]]
    assert len(cursors) >= 5
    assert whole["pageInfo"] == {
        "hasNextPage": False,
        "hasPreviousPage": False,
        "startCursor": cursors[0],
        "endCursor": cursors[-1],
    }

    pages, after = [], None
    while True:
        page = await _read(gql, listing, PAGE_SIZE, after)
        pages.append(page)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]

    expected_pages = [cursors[i : i + PAGE_SIZE] for i in range(0, len(cursors), PAGE_SIZE)]
    assert [[edge["cursor"] for edge in page["edges"]] for page in pages] == expected_pages
    for number, (page, expected) in enumerate(zip(pages, expected_pages, strict=True)):
        assert page["pageInfo"] == {
            "hasNextPage": number < len(pages) - 1,
            "hasPreviousPage": number > 0,
            "startCursor": expected[0],
            "endCursor": expected[-1],
        }
        if "hasNextPage" in page:  # the deprecated fields say what pageInfo says
            assert (page["hasNextPage"], page["endCursor"]) == (
                page["pageInfo"]["hasNextPage"],
                page["pageInfo"]["endCursor"],
            )
    assert len(pages) >= 3  # a first, a middle and a last page were all checked


async def test_a_page_after_an_item_that_left_the_list_starts_right_after_it(
    gql: GraphQLCall, admin_token: str
) -> None:
    await _create_notes(gql, 4)
    listing = Listing(NOTES, admin_token, ("notes",), {})
    whole = await _read(gql, listing, 100, None)
    ids = [edge["node"]["id"] for edge in whole["edges"]]
    cursors = [edge["cursor"] for edge in whole["edges"]]
    deleted = await gql("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": ids[1]})
    assert "errors" not in deleted, deleted

    page = await _read(gql, listing, 1, cursors[1])

    assert [edge["node"]["id"] for edge in page["edges"]] == [ids[2]]
    assert page["pageInfo"]["hasNextPage"] is True
    # The rule's stated allowance (fortemi.platform.pages): with the cursor's own item
    # gone, older items are not looked for, and the page claims none.
    assert page["pageInfo"]["hasPreviousPage"] is False
