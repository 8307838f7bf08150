"""What the server offers: sealing for addresses from public keys only."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fortemi.crypto.envelope import open_bytes
from fortemi.crypto.errors import InvalidAddress
from fortemi.crypto.keys import Keypair
from fortemi.crypto.service import EncryptionService, StaticDirectory
from fortemi.platform.errors import BadUserInput, NotFound


@pytest.fixture(scope="module")
def people() -> list[Keypair]:
    return [Keypair.generate() for _ in range(3)]


@pytest.fixture
def service(people: list[Keypair]) -> EncryptionService:
    return EncryptionService(StaticDirectory(p.public for p in people[:2]))


async def test_bytes_sealed_for_addresses_open_with_each_recipients_key(
    service: EncryptionService, people: list[Keypair]
) -> None:
    addresses = [str(p.address) for p in people[:2]]
    sealed = await service.encrypt(addresses, b"export", filename="export.tar.zst")
    assert open_bytes(sealed, people[0]) == b"export"
    assert open_bytes(sealed, people[1]) == b"export"


async def test_a_stream_is_sealed_block_by_block(
    service: EncryptionService, people: list[Keypair]
) -> None:
    blocks = [bytes([i]) * 50_000 for i in range(5)]

    async def source() -> AsyncIterator[bytes]:
        for block in blocks:
            yield block

    stream = await service.encrypt_stream([str(people[1].address)], source(), filename=None)
    sealed = b"".join([part async for part in stream])
    assert open_bytes(sealed, people[1]) == b"".join(blocks)


async def test_an_address_named_twice_is_one_recipient(
    service: EncryptionService, people: list[Keypair]
) -> None:
    address = str(people[0].address)
    assert await service.recipients([address, address]) == [people[0].public]


async def test_an_address_without_a_known_key_is_not_found(
    service: EncryptionService, people: list[Keypair]
) -> None:
    with pytest.raises(NotFound, match=str(people[2].address)):
        await service.encrypt([str(people[2].address)], b"x", filename=None)


async def test_a_malformed_address_is_refused_before_any_lookup(
    service: EncryptionService, people: list[Keypair]
) -> None:
    address = str(people[0].address)
    # Its last character changed (to "2" when it is a "1" already: keys are random).
    typo = address[:-1] + ("2" if address.endswith("1") else "1")
    assert typo != address
    with pytest.raises(InvalidAddress):
        await service.encrypt([typo], b"x", filename=None)


async def test_no_recipient_or_a_bad_filename_is_bad_input(
    service: EncryptionService, people: list[Keypair]
) -> None:
    with pytest.raises(BadUserInput) as caught:
        await service.encrypt([], b"x", filename=None)
    assert caught.value.extensions == {"reason": "no_recipients"}
    with pytest.raises(BadUserInput) as caught:
        await service.encrypt([str(people[0].address)], b"x", filename="a\x00b")
    assert caught.value.extensions == {"reason": "bad_filename"}
