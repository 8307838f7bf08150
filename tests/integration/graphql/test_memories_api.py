"""Memories through GraphQL: admin-only lifecycle, routing by header, NOT_FOUND for unknowns."""

from __future__ import annotations

import itertools
import os

from fortemi.platform.memories import MemoryService
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes, open_memory

_names = itertools.count()


def _name() -> str:
    return f"api{os.getpid()}_{next(_names)}"


async def test_admin_creates_lists_and_deletes_a_memory(gql: GraphQLCall, admin_token: str) -> None:
    name = _name()
    created = await gql(
        "mutation($n: String!) { createMemory(name: $n) { name isDefault noteCount } }",
        {"n": name},
        token=admin_token,
    )
    assert created["data"]["createMemory"] == {"name": name, "isDefault": False, "noteCount": 0}
    listed = await gql("{ memories { name } }", token=admin_token)
    assert name in [m["name"] for m in listed["data"]["memories"]]
    refused = await gql(
        'mutation($n: String!) { deleteMemory(name: $n, confirm: "yes") }',
        {"n": name},
        token=admin_token,
    )
    assert error_codes(refused) == ["BAD_USER_INPUT"]
    deleted = await gql(
        "mutation($n: String!) { deleteMemory(name: $n, confirm: $n) }",
        {"n": name},
        token=admin_token,
    )
    assert deleted["data"]["deleteMemory"] is True
    gone = await gql(
        "query($n: String!) { memory(name: $n) { name } }", {"n": name}, token=admin_token
    )
    assert gone["data"]["memory"] is None


async def test_creating_a_memory_without_the_admin_role_is_forbidden(gql: GraphQLCall) -> None:
    body = await gql('mutation { createMemory(name: "sneaky") { name } }')
    assert error_codes(body) == ["FORBIDDEN"]
    check = await gql('{ memory(name: "sneaky") { name } }')
    assert check["data"]["memory"] is None


async def test_invalid_memory_name_is_bad_user_input(gql: GraphQLCall, admin_token: str) -> None:
    body = await gql('mutation { createMemory(name: "Bad-Name") { name } }', token=admin_token)
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert "^[a-z][a-z0-9_]{0,39}$" in body["errors"][0]["message"]


async def test_unknown_memory_header_is_not_found(gql: GraphQLCall) -> None:
    body = await gql("{ notes { totalCount } }", memory="no_such_memory")
    assert error_codes(body) == ["NOT_FOUND"]


async def test_malformed_memory_header_is_bad_user_input(gql: GraphQLCall) -> None:
    body = await gql("{ notes { totalCount } }", memory="mem_x; DROP SCHEMA public")
    assert error_codes(body) == ["BAD_USER_INPUT"]


async def test_requests_without_header_use_the_default_memory(
    gql: GraphQLCall, admin_token: str, memory: str
) -> None:
    previous = await gql("{ memories { name isDefault } }", token=admin_token)
    old_default = next(m["name"] for m in previous["data"]["memories"] if m["isDefault"])
    try:
        made = await gql(
            "mutation($n: String!) { setDefaultMemory(name: $n) { name isDefault } }",
            {"n": memory},
            token=admin_token,
        )
        assert made["data"]["setDefaultMemory"] == {"name": memory, "isDefault": True}
        await gql('mutation { createNote(input: {title: "in default"}) { id } }', memory=None)
        # The memory service caches the default briefly; ask the chosen memory directly too.
        listed = await gql("{ notes { edges { node { title } } } }", memory=memory)
        assert [e["node"]["title"] for e in listed["data"]["notes"]["edges"]] == ["in default"]
    finally:
        await gql(
            "mutation($n: String!) { setDefaultMemory(name: $n) { name } }",
            {"n": old_default},
            token=admin_token,
        )


async def test_deleting_the_default_memory_is_a_conflict(
    gql: GraphQLCall, admin_token: str
) -> None:
    listed = await gql("{ memories { name isDefault } }", token=admin_token)
    default = next(m["name"] for m in listed["data"]["memories"] if m["isDefault"])
    body = await gql(
        "mutation($n: String!) { deleteMemory(name: $n, confirm: $n) }",
        {"n": default},
        token=admin_token,
    )
    assert error_codes(body) == ["CONFLICT"]


async def test_memory_deleted_by_another_replica_is_not_found_not_a_crash(
    gql: GraphQLCall, memory_service: MemoryService, runtime: Runtime
) -> None:
    # memory_service stands for another API replica: its own registry and cache.
    name = await open_memory(runtime)
    warm = await gql("{ notes { totalCount } }", memory=name)  # this replica caches it
    assert warm["data"] == {"notes": {"totalCount": 0}}
    await memory_service.delete(name, confirm=name)
    body = await gql("{ notes { totalCount } }", memory=name)
    assert error_codes(body) == ["NOT_FOUND"]
    created = await gql('mutation { createNote(input: {title: "x"}) { id } }', memory=name)
    assert error_codes(created) == ["NOT_FOUND"]
