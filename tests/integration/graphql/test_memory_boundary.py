"""Through the API: a memory is a tenant boundary, and a read rule never grants a write.

A project's or skill's policy applies in every memory, but only to callers the memory
itself lets in; and a policy that states only who reads a resource lets nobody write,
delete or purge its notes (only a grant reaches an action the policy does not state).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

CREATE = "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }"
TITLES = "query($f: NoteFilter) { notes(first: 50, filter: $f) { edges { node { title } } } }"
BY_ID = "query($id: ID!) { note(id: $id) { id } }"
DELETE = "mutation($id: ID!) { deleteNote(id: $id) { id } }"
PURGE = "mutation($id: ID!) { purgeNote(id: $id) }"

# alpha belongs to its owners: viewers among them read, editors write.
ALPHA_POLICY: dict[str, Any] = {
    "version": 1,
    "access_level": "private",
    "owner_group": "alpha-owners",
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}, "delete": {"required_role": "editor"}},
}


@pytest.fixture
async def alpha(runtime: Runtime) -> AsyncIterator[str]:
    name = f"alpha{os.getpid()}_{uuid.uuid4().hex[:8]}"
    await runtime.memories.create(name, created_by="test")
    await runtime.policies.put("memory", name, name, {**ALPHA_POLICY, "memory": name}, actor="test")
    yield name
    await runtime.memories.delete(name, confirm=name)
    await runtime.policies.invalidate()


def _reason(body: dict[str, Any]) -> str | None:
    reason: str | None = (body.get("errors") or [{}])[0].get("extensions", {}).get("reason")
    return reason


async def _titles(
    gql: GraphQLCall, token: str, memory: str, filter_: dict[str, Any] | None = None
) -> list[str]:
    body = await gql(TITLES, {"f": filter_}, token=token, memory=memory)
    assert "errors" not in body, body
    return sorted(edge["node"]["title"] for edge in body["data"]["notes"]["edges"])


async def test_a_project_policy_lets_nobody_into_a_memory_that_does_not_admit_them(
    gql: GraphQLCall, issuer: LocalIssuer, alpha: str
) -> None:
    # Both are editors in poimen's groups; only the owner is in alpha's owner group.
    outsider = issuer.mint("mallory", groups=["platform-team", "devops-team"], roles=["editor"])
    owner = issuer.mint("olga", groups=["alpha-owners", "platform-team"], roles=["editor"])

    planted = {"title": "planted", "project": "poimen"}
    # A memory she may not enter answers as if it did not exist, whatever project asks.
    refused = await gql(CREATE, {"i": planted}, token=outsider, memory=alpha)
    assert error_codes(refused) == ["NOT_FOUND"]

    runbook = {"title": "runbook", "project": "poimen"}
    made = await gql(CREATE, {"i": runbook}, token=owner, memory=alpha)
    assert "errors" not in made, made
    note_id = made["data"]["createNote"]["id"]
    assert await _titles(gql, owner, alpha) == ["runbook"]

    # The outsider cannot list alpha, with or without poimen, and by id the note does
    # not exist for her.
    for filter_ in (None, {"project": "poimen"}):
        asked = await gql(TITLES, {"f": filter_}, token=outsider, memory=alpha)
        assert error_codes(asked) == ["NOT_FOUND"]
    by_id = await gql(BY_ID, {"id": note_id}, token=outsider, memory=alpha)
    assert by_id["data"] == {"note": None}
    for mutation in (DELETE, PURGE):
        body = await gql(mutation, {"id": note_id}, token=outsider, memory=alpha)
        assert error_codes(body) == ["NOT_FOUND"]
    assert await _titles(gql, owner, alpha) == ["runbook"]


@pytest.fixture
async def read_only_skill(runtime: Runtime) -> AsyncIterator[str]:
    """A shared skill whose policy states only its read rule, plus a grant for its curator."""
    name = f"SKILL-readonly-{uuid.uuid4().hex[:8]}"
    document = {
        "version": 1,
        "access_level": "public",
        "required_permission": "skill:read",
        "grant": {"subjects": ["curator"]},
    }
    await runtime.policies.put("skill", None, name, document, actor="test")
    yield name
    await runtime.policies.delete("skill", None, name)


async def test_a_read_permission_never_creates_deletes_or_purges_skill_notes(
    gql: GraphQLCall, issuer: LocalIssuer, read_only_skill: str
) -> None:
    reader = issuer.mint("pat", roles=["viewer"], permissions=["skill:read"])
    curator = issuer.mint("curator", roles=["viewer"])

    refused = await gql(CREATE, {"i": {"title": "mine", "skill": read_only_skill}}, token=reader)
    assert error_codes(refused) == ["FORBIDDEN"]
    assert _reason(refused) == "action_not_in_policy"

    made = await gql(CREATE, {"i": {"title": "howto", "skill": read_only_skill}}, token=curator)
    assert "errors" not in made, made
    note_id = made["data"]["createNote"]["id"]
    # The reader reads it, as the policy says...
    assert await gql(BY_ID, {"id": note_id}, token=reader) == {"data": {"note": {"id": note_id}}}
    # ...and may neither delete it nor, once deleted by its curator, purge it.
    deleting = await gql(DELETE, {"id": note_id}, token=reader)
    assert error_codes(deleting) == ["FORBIDDEN"]
    assert _reason(deleting) == "action_not_in_policy"
    assert "errors" not in await gql(DELETE, {"id": note_id}, token=curator)
    purging = await gql(PURGE, {"id": note_id}, token=reader)
    assert error_codes(purging) == ["FORBIDDEN"]
    assert _reason(purging) == "action_not_in_policy"
    assert await gql(BY_ID, {"id": note_id}, token=curator) == {"data": {"note": {"id": note_id}}}


async def test_the_seed_skill_needs_skill_write_to_write(
    gql: GraphQLCall, issuer: LocalIssuer
) -> None:
    skill = "SKILL-kubernetes-debugging"
    reader = issuer.mint("pat", roles=["viewer"], permissions=["skill:read"])
    writer = issuer.mint("wes", roles=["viewer"], permissions=["skill:read", "skill:write"])
    refused = await gql(CREATE, {"i": {"title": "t", "skill": skill}}, token=reader)
    assert error_codes(refused) == ["FORBIDDEN"]
    assert _reason(refused) == "permission_required"
    made = await gql(CREATE, {"i": {"title": "t", "skill": skill}}, token=writer)
    assert "errors" not in made, made
