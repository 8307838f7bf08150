"""``GET /attachments/{id}?encryptFor=...``: the bytes sealed (MMPKE01) for published keys,
which only the private keys open; a malformed or unpublished address is refused before
anything is sent, and the access rules are those of the plain download."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fortemi.crypto.envelope import open_bytes
from fortemi.crypto.errors import NotARecipient
from fortemi.crypto.keys import Keypair, public_key_file
from tests.integration.graphql.attachments_support import ATTACH, upload
from tests.integration.graphql.conftest import GraphQLCall

PUBLISH = "mutation($k: String!) { publishPublicKey(keyFile: $k) { address } }"
CONTENT = b"the figures nobody else may read\n" + bytes(range(256)) * 4096


async def _attached(
    http: httpx.AsyncClient, gql: GraphQLCall, token: str, memory: str
) -> dict[str, Any]:
    body = await gql(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": {"title": "Sealed", "content": "a note with a secret file"}},
    )
    assert "errors" not in body, body
    response = await upload(
        http, ATTACH, {"n": body["data"]["createNote"]["id"]}, ("secret.bin", CONTENT, None),
        token=token, memory=memory,
    )  # fmt: skip
    attached = response.json()
    assert "errors" not in attached, attached
    found: dict[str, Any] = attached["data"]["attachFile"]
    return found


async def _publish(gql: GraphQLCall) -> Keypair:
    keypair = Keypair.generate()
    body = await gql(PUBLISH, {"k": public_key_file(keypair.public).decode()})
    assert "errors" not in body, body
    return keypair


async def test_an_encrypted_download_opens_with_each_recipients_private_key_only(
    live_server: str, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    alice, bob, stranger = await _publish(gql), await _publish(gql), Keypair.generate()
    headers = {"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory}
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:
        attachment = await _attached(http, gql, user_token, memory)
        sealed = await http.get(
            attachment["downloadPath"],
            params=[("encryptFor", str(alice.address)), ("encryptFor", str(bob.address))],
            headers=headers,
        )

    assert sealed.status_code == 200
    assert sealed.headers["content-type"] == "application/octet-stream"
    assert 'filename="secret.bin.mmpke"' in sealed.headers["content-disposition"]
    assert sealed.headers["content-disposition"].startswith("attachment;")
    assert sealed.headers["x-content-type-options"] == "nosniff"
    assert sealed.content.startswith(b"MMPKE01\n")
    assert CONTENT[:64] not in sealed.content
    assert open_bytes(sealed.content, alice) == CONTENT
    assert open_bytes(sealed.content, bob) == CONTENT
    with pytest.raises(NotARecipient):
        open_bytes(sealed.content, stranger)


async def test_an_unpublished_address_is_a_404_naming_it_and_a_malformed_one_a_400(
    live_server: str, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    known, unpublished = await _publish(gql), Keypair.generate()
    headers = {"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory}
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:
        attachment = await _attached(http, gql, user_token, memory)
        path = attachment["downloadPath"]
        missing = await http.get(
            path,
            params=[("encryptFor", str(known.address)), ("encryptFor", str(unpublished.address))],
            headers=headers,
        )
        malformed = await http.get(
            path, params={"encryptFor": "mm:not-an-address"}, headers=headers
        )
        anonymous = await http.get(path, params={"encryptFor": str(known.address)})
        elsewhere = await http.get(
            "/attachments/00000000-0000-4000-8000-000000000000",
            params={"encryptFor": str(known.address)},
            headers=headers,
        )

    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json"
    assert str(unpublished.address) in missing.json()["errors"][0]["message"]
    assert malformed.status_code == 400
    assert malformed.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "[address_" in malformed.json()["errors"][0]["message"]  # the reason, named
    assert anonymous.status_code == 401  # the same rules as the plain download
    assert elsewhere.status_code == 404
    assert "No such attachment" in elsewhere.json()["errors"][0]["message"]
