"""`fortemi pke publish` run as a user runs it, against the live server: the key lands in
the server's directory under the token's principal, and what is not a public key file
never leaves the machine."""

from __future__ import annotations

from pathlib import Path

from fortemi.crypto.keys import Keypair, public_key_file
from tests.integration.graphql.conftest import GraphQLCall
from tests.integration.graphql.test_attachments_cli import _run

LOOKUP = "query($a: String!) { publicKey(address: $a) { address ownedByMe } }"
MINE = "{ myPublicKeys { address label } }"


async def test_publish_puts_the_key_in_the_directory_under_the_callers_name(
    live_server: str, user_token: str, tmp_path: Path, gql: GraphQLCall
) -> None:
    keypair = Keypair.generate()
    (tmp_path / "me.pub").write_bytes(public_key_file(keypair.public))

    code, out, err = await _run(
        live_server, user_token, "pke", "publish", str(tmp_path / "me.pub"), "--label", "laptop"
    )

    assert code == 0, out + err
    assert out.strip() == str(keypair.address)
    found = await gql(LOOKUP, {"a": str(keypair.address)})
    assert found["data"]["publicKey"] == {"address": str(keypair.address), "ownedByMe": True}
    mine = (await gql(MINE))["data"]["myPublicKeys"]
    assert {"address": str(keypair.address), "label": "laptop"} in mine


async def test_publish_without_a_token_is_refused_and_publishes_nothing(
    live_server: str, tmp_path: Path, gql: GraphQLCall
) -> None:
    keypair = Keypair.generate()
    (tmp_path / "me.pub").write_bytes(public_key_file(keypair.public))

    code, _, err = await _run(live_server, "", "pke", "publish", str(tmp_path / "me.pub"))

    assert code == 1
    assert "UNAUTHENTICATED" in err
    assert "FORTEMI_TOKEN" in err
    assert (await gql(LOOKUP, {"a": str(keypair.address)}))["data"]["publicKey"] is None


async def test_a_file_that_is_not_a_public_key_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    (tmp_path / "oops.pub").write_text('{"format": "mmpke-private-key"}')
    # Nothing listens at this address: a refusal after sending would say "cannot reach".
    code, _, err = await _run("127.0.0.1:9", "any", "pke", "publish", str(tmp_path / "oops.pub"))

    assert code == 1
    assert "[key_file_" in err
    assert "cannot reach" not in err
