"""A note written in memory A is invisible from memory B through every query and mutation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fortemi.platform.ids import from_global_id
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes, open_memory


@pytest.fixture
async def other_memory(runtime: Runtime) -> AsyncIterator[str]:
    # Open policies in both memories: what keeps B's caller out of A is tenancy alone.
    name = await open_memory(runtime)
    yield name
    await runtime.memories.delete(name, confirm=name)


async def test_note_in_one_memory_is_invisible_from_another(
    gql: GraphQLCall, other_memory: str
) -> None:
    created = await gql(
        'mutation { createNote(input: {title: "secret", content: "A only", tags: ["t"]}) '
        "{ id contentHash } }"
    )
    note_id = created["data"]["createNote"]["id"]
    raw_uuid = from_global_id(note_id)[1]
    await gql(
        'mutation($id: ID!) { updateNote(id: $id, input: {content: "v2"}) { id } }', {"id": note_id}
    )

    async def in_b(query: str, **variables: object) -> dict[str, object]:
        return await gql(query, dict(variables), memory=other_memory)

    for an_id in (note_id, raw_uuid):
        assert (await in_b("query($id: ID!) { note(id: $id) { id } }", id=an_id))["data"] == {
            "note": None
        }
    assert (await in_b("query($id: ID!) { node(id: $id) { id } }", id=note_id))["data"] == {
        "node": None
    }
    listed = await in_b('{ notes(filter: {tags: ["t"]}) { totalCount edges { node { id } } } }')
    assert listed["data"] == {"notes": {"totalCount": 0, "edges": []}}
    trash = await in_b("{ notes(filter: {deleted: true}) { totalCount } }")
    assert trash["data"] == {"notes": {"totalCount": 0}}
    assert (
        await in_b("query($id: ID!) { noteVersion(id: $id, version: 1) { content } }", id=note_id)
    )["data"] == {"noteVersion": None}
    for query in (
        "query($id: ID!) { noteVersions(id: $id) { content } }",
        "query($id: ID!) { noteDiff(id: $id, fromVersion: 1, toVersion: 2) { unified } }",
        'mutation($id: ID!) { updateNote(id: $id, input: {content: "hijack"}) { id } }',
        "mutation($id: ID!) { deleteNote(id: $id) { id } }",
        "mutation($id: ID!) { restoreNote(id: $id) { id } }",
        "mutation($id: ID!) { purgeNote(id: $id) }",
        "mutation($id: ID!) { restoreNoteVersion(id: $id, version: 1) { id } }",
    ):
        body = await in_b(query, id=note_id)
        assert error_codes(body) == ["NOT_FOUND"], (query, body)
        assert "A only" not in str(body)
    # And the note in A is untouched by all of that.
    still = await gql(
        "query($id: ID!) { note(id: $id) { content version deleted } }", {"id": note_id}
    )
    assert still["data"]["note"] == {"content": "v2", "version": 2, "deleted": False}
