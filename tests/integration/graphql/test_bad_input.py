"""Bad input gets a stable code and a message a person can act on, and loses nothing."""

from __future__ import annotations

import httpx

from fortemi.platform.settings import Settings
from tests.integration.graphql.conftest import GraphQLCall, error_codes

CREATE = "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }"
COUNT = "{ notes(filter: {}) { totalCount } }"


async def test_oversized_content_is_refused_and_nothing_is_written(
    gql: GraphQLCall, settings: Settings
) -> None:
    body = await gql(CREATE, {"i": {"content": "x" * (settings.max_note_bytes + 1)}})
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert "FORTEMI_MAX_NOTE_BYTES" in body["errors"][0]["message"]
    assert (await gql(COUNT))["data"]["notes"]["totalCount"] == 0


async def test_nul_bytes_in_content_are_refused(gql: GraphQLCall) -> None:
    body = await gql(CREATE, {"i": {"content": "before\u0000after"}})
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert (await gql(COUNT))["data"]["notes"]["totalCount"] == 0


async def _post_raw(
    client: httpx.AsyncClient, body: bytes, token: str, memory: str
) -> httpx.Response:
    return await client.post(
        "/graphql",
        content=body,
        headers={
            "Authorization": f"Bearer {token}",
            "X-Fortemi-Memory": memory,
            "Content-Type": "application/json",
        },
    )


async def test_lone_surrogates_are_refused(
    client: httpx.AsyncClient, user_token: str, memory: str
) -> None:
    # JSON can carry an unpaired surrogate escape that is not valid Unicode text.
    raw = b'{"query": "mutation($c: String!) { createNote(input: {content: $c}) { id } }", "variables": {"c": "\\ud800"}}'
    response = await _post_raw(client, raw, user_token, memory)
    assert error_codes(response.json()) == ["BAD_USER_INPUT"]


async def test_invalid_utf8_body_is_a_client_error(
    client: httpx.AsyncClient, user_token: str, memory: str
) -> None:
    raw = b'{"query": "mutation { createNote(input: {content: \\"\xff\xfe\\"}) { id } }"}'
    response = await _post_raw(client, raw, user_token, memory)
    assert response.status_code == 400


async def test_request_body_over_the_limit_is_413(
    client: httpx.AsyncClient, user_token: str, settings: Settings
) -> None:
    response = await client.post(
        "/graphql",
        content=b"{" + b" " * settings.max_request_bytes + b"}",
        headers={"Authorization": f"Bearer {user_token}", "Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert error_codes(response.json()) == ["PAYLOAD_TOO_LARGE"]


async def test_unknown_and_malformed_ids(gql: GraphQLCall) -> None:
    unknown = await gql('{ note(id: "00000000-0000-4000-8000-000000000000") { id } }')
    assert unknown["data"] == {"note": None}
    malformed = await gql('{ note(id: "%%%") { id } }')
    assert error_codes(malformed) == ["BAD_USER_INPUT"]
    update = await gql(
        'mutation { updateNote(id: "00000000-0000-4000-8000-000000000000", input: {title: "x"}) { id } }'
    )
    assert error_codes(update) == ["NOT_FOUND"]


async def test_null_for_a_required_update_field_is_explained(gql: GraphQLCall) -> None:
    created = await gql(CREATE, {"i": {"title": "t"}})
    body = await gql(
        "mutation($id: ID!) { updateNote(id: $id, input: {title: null}) { id } }",
        {"id": created["data"]["createNote"]["id"]},
    )
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert "omit it" in body["errors"][0]["message"]


async def test_wrongly_typed_variable_is_bad_user_input(gql: GraphQLCall) -> None:
    body = await gql("query($n: Int) { notes(first: $n) { totalCount } }", {"n": "many"})
    assert error_codes(body) == ["BAD_USER_INPUT"]


async def test_metadata_that_is_not_an_object_is_refused(gql: GraphQLCall) -> None:
    body = await gql(CREATE, {"i": {"metadata": ["not", "an", "object"]}})
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert "metadata must be a JSON object" in body["errors"][0]["message"]
