"""Key files: the private key sealed by a passphrase, the public key beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fortemi.crypto.encoding import canonical_json
from fortemi.crypto.errors import InvalidKeyFile, WeakPassphrase, WrongPassphrase
from fortemi.crypto.keys import (
    Argon2idCost,
    Keypair,
    lock_private_key,
    parse_public_key,
    public_key_file,
    read_private_key_file,
    read_public_key_file,
    unlock_private_key,
    write_private_key_file,
    write_public_key_file,
)

# The lowest cost a key file may ask for: these tests are about the format, not the cost
# (the vectors test the default cost).
CHEAP = Argon2idCost(time_cost=1, memory_kib=8 * 1024, parallelism=1)
PASSPHRASE = "correct horse battery staple"


@pytest.fixture(scope="module")
def keypair() -> Keypair:
    return Keypair.generate()


@pytest.fixture(scope="module")
def locked(keypair: Keypair) -> bytes:
    return lock_private_key(keypair, PASSPHRASE, cost=CHEAP)


def _edited(locked: bytes, edit: dict[str, Any]) -> bytes:
    document = json.loads(locked)
    for key, value in edit.items():
        if isinstance(value, dict):
            document[key].update(value)
        else:
            document[key] = value
    return canonical_json(document) + b"\n"


def test_a_private_key_file_opens_with_its_passphrase(keypair: Keypair, locked: bytes) -> None:
    assert unlock_private_key(locked, PASSPHRASE) == keypair
    assert keypair.private.hex() not in locked.decode()


def test_a_wrong_passphrase_is_refused(locked: bytes) -> None:
    with pytest.raises(WrongPassphrase) as caught:
        unlock_private_key(locked, PASSPHRASE + "!")
    assert caught.value.reason == "wrong_passphrase"


@pytest.mark.parametrize("passphrase", ["", "short", "eleven char", "é" * 11])
def test_a_passphrase_under_twelve_characters_is_refused(keypair: Keypair, passphrase: str) -> None:
    with pytest.raises(WeakPassphrase, match="at least 12") as caught:
        lock_private_key(keypair, passphrase, cost=CHEAP)
    assert caught.value.reason == "passphrase_too_short"


def test_a_passphrase_is_normalised_before_it_is_used(keypair: Keypair) -> None:
    composed = "caf\u00e9 au lait, s'il vous plait"
    decomposed = "cafe\u0301 au lait, s'il vous plait"
    locked = lock_private_key(keypair, composed, cost=CHEAP)
    assert unlock_private_key(locked, decomposed) == keypair


@pytest.mark.parametrize(
    "edit",
    [
        {"kdf": {"time_cost": 2}},
        {"kdf": {"salt": "AAAAAAAAAAAAAAAAAAAAAA=="}},
        {"cipher": {"nonce": "AAAAAAAAAAAAAAAA"}},
    ],
)
def test_an_edited_private_key_file_does_not_open(locked: bytes, edit: dict[str, Any]) -> None:
    with pytest.raises(WrongPassphrase):
        unlock_private_key(_edited(locked, edit), PASSPHRASE)


def test_a_private_key_file_with_another_public_key_is_refused(locked: bytes) -> None:
    other = Keypair.generate().public
    edited = _edited(
        locked,
        {
            "public_key": json.loads(public_key_file(other))["public_key"],
            "address": str(other.address),
        },
    )
    with pytest.raises(WrongPassphrase):
        unlock_private_key(edited, PASSPHRASE)


def test_a_key_file_whose_address_is_not_its_key_is_refused(locked: bytes) -> None:
    edited = _edited(locked, {"address": str(Keypair.generate().address)})
    with pytest.raises(InvalidKeyFile) as caught:
        unlock_private_key(edited, PASSPHRASE)
    assert caught.value.reason == "key_file_mismatch"


@pytest.mark.parametrize(
    "kdf",
    [
        {"memory_kib": 4 * 1024 * 1024},
        {"memory_kib": 1024},
        {"time_cost": 1000},
        {"parallelism": 0},
    ],
)
def test_a_key_file_asking_for_an_unreasonable_cost_is_refused_before_hashing(
    locked: bytes, kdf: dict[str, int]
) -> None:
    with pytest.raises(InvalidKeyFile) as caught:
        unlock_private_key(_edited(locked, {"kdf": kdf}), PASSPHRASE)
    assert caught.value.reason == "key_file_cost"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"format":"mmpke-private-key","version":2}',
        b'{"format":"mmpke-private-key","version":1,"a":1,"a":2}',
    ],
)
def test_what_is_not_a_private_key_file_is_refused(data: bytes) -> None:
    with pytest.raises(InvalidKeyFile) as caught:
        unlock_private_key(data, PASSPHRASE)
    assert caught.value.reason == "key_file_malformed"


def test_a_public_key_file_is_refused_where_a_private_one_is_expected(keypair: Keypair) -> None:
    with pytest.raises(InvalidKeyFile, match="it is a public key, where a private key file"):
        unlock_private_key(public_key_file(keypair.public), PASSPHRASE)


def test_a_public_key_file_reads_back_and_must_match_its_address(keypair: Keypair) -> None:
    data = public_key_file(keypair.public)
    assert parse_public_key(data) == keypair.public
    edited = data.replace(str(keypair.address).encode(), str(Keypair.generate().address).encode())
    with pytest.raises(InvalidKeyFile) as caught:
        parse_public_key(edited)
    assert caught.value.reason == "key_file_mismatch"


def test_key_files_are_written_once_and_the_private_one_is_private(
    tmp_path: Path, keypair: Keypair, locked: bytes
) -> None:
    private, public = tmp_path / "me.key", tmp_path / "me.pub"
    write_private_key_file(private, locked)
    write_public_key_file(public, keypair.public)
    assert private.stat().st_mode & 0o777 == 0o600
    assert read_private_key_file(private, PASSPHRASE) == keypair
    assert read_public_key_file(public) == keypair.public
    with pytest.raises(FileExistsError):
        write_private_key_file(
            private, lock_private_key(Keypair.generate(), PASSPHRASE, cost=CHEAP)
        )
    assert read_private_key_file(private, PASSPHRASE) == keypair


def test_the_private_key_is_not_in_its_repr(keypair: Keypair) -> None:
    assert keypair.private.hex() not in repr(keypair)
    assert str(keypair.address) in repr(keypair)
