"""The public key directory through GraphQL: publish your own key file, look any address
up, revoke only your own; and the server's encryptFor resolving against it, sealing for a
key whose private half never left the user."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.crypto.envelope import open_bytes
from fortemi.crypto.keys import Keypair, public_key_file
from fortemi.platform.errors import NotFound
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

PUBLISH = """
mutation($k: String!, $l: String) {
  publishPublicKey(keyFile: $k, label: $l) { address label ownedByMe revokedAt keyFile }
}"""
LOOKUP = "query($a: String!) { publicKey(address: $a) { address ownedByMe keyFile } }"
MINE = "{ myPublicKeys { address label revokedAt } }"
REVOKE = "mutation($a: String!) { revokePublicKey(address: $a) { address revokedAt } }"


def _key_file() -> tuple[Keypair, str]:
    keypair = Keypair.generate()
    return keypair, public_key_file(keypair.public).decode()


def _data(body: dict[str, Any], field: str) -> Any:
    assert "errors" not in body, body
    return body["data"][field]


async def test_a_published_key_is_found_by_its_address_by_anyone_signed_in(
    gql: GraphQLCall, issuer: LocalIssuer
) -> None:
    keypair, key_file = _key_file()
    bob = issuer.mint("bob-keys-1")

    published = _data(await gql(PUBLISH, {"k": key_file, "l": "laptop"}), "publishPublicKey")
    seen_by_bob = _data(await gql(LOOKUP, {"a": published["address"]}, token=bob), "publicKey")

    assert published["address"] == str(keypair.address)
    assert (published["label"], published["ownedByMe"], published["revokedAt"]) == (
        "laptop", True, None,
    )  # fmt: skip
    assert seen_by_bob == {"address": str(keypair.address), "ownedByMe": False, "keyFile": key_file}


async def test_publishing_again_is_idempotent_and_another_owner_gets_conflict(
    gql: GraphQLCall, issuer: LocalIssuer
) -> None:
    _, key_file = _key_file()
    carol = issuer.mint("carol-keys-2")

    first = _data(await gql(PUBLISH, {"k": key_file, "l": "a"}, token=carol), "publishPublicKey")
    again = _data(await gql(PUBLISH, {"k": key_file, "l": "b"}, token=carol), "publishPublicKey")
    stolen = await gql(PUBLISH, {"k": key_file})
    mine = _data(await gql(MINE, token=carol), "myPublicKeys")

    assert first["address"] == again["address"]
    assert again["label"] == "b"
    assert error_codes(stolen) == ["CONFLICT"]
    assert stolen["errors"][0]["extensions"]["reason"] == "key_owned_elsewhere"
    assert mine == [{"address": first["address"], "label": "b", "revokedAt": None}]


async def test_only_the_owner_revokes_and_a_revoked_key_is_no_longer_found(
    gql: GraphQLCall, issuer: LocalIssuer
) -> None:
    _, key_file = _key_file()
    dave = issuer.mint("dave-keys-3")
    address = _data(await gql(PUBLISH, {"k": key_file}, token=dave), "publishPublicKey")["address"]

    by_other = await gql(REVOKE, {"a": address})
    revoked = _data(await gql(REVOKE, {"a": address}, token=dave), "revokePublicKey")
    lookup = _data(await gql(LOOKUP, {"a": address}), "publicKey")

    assert error_codes(by_other) == ["NOT_FOUND"]
    assert revoked["revokedAt"] is not None
    assert lookup is None


async def test_malformed_key_files_and_addresses_are_refused_with_their_reason(
    gql: GraphQLCall,
) -> None:
    _, key_file = _key_file()
    edited = key_file.replace('"address":"mm:', '"address":"mm:2')

    answers = [
        await gql(PUBLISH, {"k": "not json"}),
        await gql(PUBLISH, {"k": edited}),
        await gql(PUBLISH, {"k": "x" * 10_000}),
        await gql(PUBLISH, {"k": key_file, "l": "l" * 201}),
        await gql(LOOKUP, {"a": "mm:0OIl"}),
    ]

    reasons = [body["errors"][0]["extensions"].get("reason") for body in answers]
    assert [error_codes(body) for body in answers] == [["BAD_USER_INPUT"]] * 5
    assert reasons == [
        "key_file_malformed", "key_file_mismatch", "key_file_too_large", "label_too_long",
        "address_base58",
    ]  # fmt: skip


async def test_encrypt_for_seals_for_a_published_key_that_its_private_key_opens(
    gql: GraphQLCall, runtime: Runtime
) -> None:
    keypair, key_file = _key_file()
    other, _ = _key_file()
    _data(await gql(PUBLISH, {"k": key_file}), "publishPublicKey")
    encryption = runtime.services.encryption

    sealed = await encryption.encrypt([str(keypair.address)], b"for your eyes", filename="a.txt")

    assert open_bytes(sealed, keypair) == b"for your eyes"
    with pytest.raises(NotFound, match=str(other.address)):  # named, never skipped
        await encryption.encrypt([str(other.address)], b"x", filename=None)
