"""mm: addresses: what a key's address is, and every way a wrong one is refused."""

from __future__ import annotations

import base58
import pytest

from fortemi.crypto.addresses import Address
from fortemi.crypto.errors import InvalidAddress
from fortemi.crypto.keys import Keypair

ALPHABET = base58.BITCOIN_ALPHABET.decode("ascii")


def test_an_address_reads_back_as_itself() -> None:
    keypair = Keypair.generate()
    text = str(keypair.address)
    assert text.startswith("mm:")
    assert Address.parse(text) == keypair.address
    assert len(base58.b58decode(text[3:])) == 25


def test_every_single_character_substitution_is_refused() -> None:
    text = str(Keypair.generate().address)
    refused = 0
    for position in range(3, len(text)):
        for replacement in ALPHABET:
            if replacement == text[position]:
                continue
            typo = text[:position] + replacement + text[position + 1 :]
            with pytest.raises(InvalidAddress) as caught:
                Address.parse(typo)
            assert caught.value.reason in {"address_checksum", "address_version", "address_length"}
            refused += 1
    assert refused == (len(text) - 3) * (len(ALPHABET) - 1)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "address_prefix"),
        ("MM:abc", "address_prefix"),
        ("mm:", "address_length"),
        ("mm:" + "2" * 200, "address_length"),
        ("mm:0OIl", "address_base58"),
        ("mm:abc def", "address_base58"),
        ("mm:2NEpo7TZRRrLZSi2U", "address_length"),
    ],
)
def test_malformed_addresses_are_refused_with_their_reason(text: str, reason: str) -> None:
    with pytest.raises(InvalidAddress) as caught:
        Address.parse(text)
    assert caught.value.reason == reason
    assert caught.value.code == "BAD_USER_INPUT"
    assert caught.value.extensions == {"reason": reason}


def test_a_non_base58_character_is_named_in_the_message() -> None:
    text = str(Keypair.generate().address)
    with pytest.raises(InvalidAddress, match="'0' is not Base58"):
        Address.parse(text[:5] + "0" + text[6:])
