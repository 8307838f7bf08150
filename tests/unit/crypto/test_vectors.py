"""The published test vectors (tests/data/pke/vectors.json), byte for byte, and decoded a
second time by the README's recipe with nothing but the primitives, as another
implementation would."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from argon2.low_level import Type, hash_secret_raw
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fortemi.crypto.addresses import Address
from fortemi.crypto.envelope import SealSecrets, open_bytes, seal_bytes
from fortemi.crypto.errors import InvalidAddress
from fortemi.crypto.keys import (
    Argon2idCost,
    Keypair,
    PublicKey,
    lock_private_key,
    public_key_file,
    unlock_private_key,
)

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[2] / "data" / "pke" / "vectors.json").read_text(encoding="utf-8")
)
ENVELOPES: list[dict[str, Any]] = VECTORS["envelopes"]


def _keypair(name: str) -> Keypair:
    return Keypair.from_private_bytes(bytes.fromhex(VECTORS["keys"][name]["private_key"]))


@pytest.mark.parametrize("name", sorted(VECTORS["keys"]))
def test_each_vector_key_has_its_public_key_address_and_file(name: str) -> None:
    expected = VECTORS["keys"][name]
    keypair = _keypair(name)
    assert keypair.public.raw.hex() == expected["public_key"]
    assert str(keypair.address) == expected["address"]
    assert Address.parse(expected["address"]) == keypair.address
    assert public_key_file(keypair.public).decode() == VECTORS["public_key_files"][name]


@pytest.mark.parametrize("vector", ENVELOPES, ids=[v["title"] for v in ENVELOPES])
def test_sealing_with_the_vector_values_gives_the_vector_file(vector: dict[str, Any]) -> None:
    secrets = SealSecrets(
        ephemeral_private_key=bytes.fromhex(vector["ephemeral_private_key"]),
        data_key=bytes.fromhex(vector["data_key"]),
        data_nonce=bytes.fromhex(vector["data_nonce"]),
        wrap_nonces=tuple(bytes.fromhex(n) for n in vector["wrap_nonces"]),
    )
    sealed = seal_bytes(
        bytes.fromhex(vector["plaintext"]),
        [_keypair(name).public for name in vector["recipients"]],
        filename=vector["filename"],
        chunk_size=vector["chunk_size"],
        secrets=secrets,
    )
    assert sealed.hex() == vector["file"]
    for name in vector["recipients"]:
        assert open_bytes(sealed, _keypair(name)).hex() == vector["plaintext"]


def _by_the_recipe(vector: dict[str, Any], name: str) -> bytes:
    """Decrypt as the README says, with only X25519, HKDF and AES-GCM."""
    file = bytes.fromhex(vector["file"])
    assert file[:8] == b"MMPKE01\n"
    (length,) = struct.unpack("<I", file[8:12])
    header_bytes = file[12 : 12 + length]
    assert header_bytes.decode("utf-8") == vector["header"]
    header = json.loads(header_bytes)
    assert (
        json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        == header_bytes
    )
    private = X25519PrivateKey.from_private_bytes(
        bytes.fromhex(VECTORS["keys"][name]["private_key"])
    )
    public = bytes.fromhex(VECTORS["keys"][name]["public_key"])
    entry = next(
        r for r in header["recipients"] if r["address"] == VECTORS["keys"][name]["address"]
    )
    ephemeral = base64.b64decode(header["ephemeral_public_key"])
    assert ephemeral.hex() == vector["ephemeral_public_key"]
    shared = private.exchange(X25519PublicKey.from_public_bytes(ephemeral))
    wrap_key = HKDF(SHA256(), 32, salt=ephemeral + public, info=b"MMPKE01 wrap key").derive(shared)
    expected = next(w for w in vector["wraps"] if w["address"] == entry["address"])
    assert (shared.hex(), wrap_key.hex()) == (expected["shared_secret"], expected["wrap_key"])
    blanked = dict(header, recipients=[dict(r, wrapped_key="") for r in header["recipients"]])
    blank_bytes = json.dumps(
        blanked, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode()
    wrap_aad = file[:12] + blank_bytes
    assert wrap_aad.hex() == vector["wrap_associated_data"]
    b64 = base64.b64decode
    data_key = AESGCM(wrap_key).decrypt(b64(entry["nonce"]), b64(entry["wrapped_key"]), wrap_aad)
    assert data_key.hex() == vector["data_key"]
    preamble, payload = file[: 12 + length], file[12 + length :]
    sealed_chunk = header["chunk_size"] + 16
    pieces = [payload[i : i + sealed_chunk] for i in range(0, len(payload), sealed_chunk)] or [b""]
    plaintext = b""
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        nonce = b64(header["data_nonce"]) + struct.pack(">I", index) + bytes([last])
        plaintext += AESGCM(data_key).decrypt(nonce, piece, preamble)
    return plaintext


@pytest.mark.parametrize("vector", ENVELOPES, ids=[v["title"] for v in ENVELOPES])
def test_each_vector_decrypts_by_the_published_recipe(vector: dict[str, Any]) -> None:
    for name in vector["recipients"]:
        assert _by_the_recipe(vector, name).hex() == vector["plaintext"]


def test_the_private_key_file_vector_is_reproduced_and_opens() -> None:
    vector = VECTORS["private_key_file"]
    cost = vector["argon2id"]
    randomness = iter([bytes.fromhex(vector["salt"]), bytes.fromhex(vector["nonce"])])
    keypair = _keypair(vector["owner"])
    locked = lock_private_key(
        keypair,
        vector["passphrase"],
        cost=Argon2idCost(cost["time_cost"], cost["memory_kib"], cost["parallelism"]),
        random=lambda n: next(randomness),
    )
    assert locked.decode() == vector["file"]
    assert unlock_private_key(locked, vector["passphrase"]) == keypair
    # And by the recipe: Argon2id of the passphrase, AES-GCM with the rest as associated data.
    document = json.loads(vector["file"])
    sealed = base64.b64decode(document.pop("encrypted_private_key"))
    key = hash_secret_raw(
        vector["passphrase"].encode(),
        bytes.fromhex(vector["salt"]),
        time_cost=cost["time_cost"],
        memory_cost=cost["memory_kib"],
        parallelism=cost["parallelism"],
        hash_len=32,
        type=Type.ID,
        version=cost["version"],
    )
    aad = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    private = AESGCM(key).decrypt(bytes.fromhex(vector["nonce"]), sealed, aad)
    assert private == keypair.private
    assert PublicKey(keypair.public.raw).address == keypair.address


@pytest.mark.parametrize(
    "vector", VECTORS["invalid_addresses"], ids=[v["reason"] for v in VECTORS["invalid_addresses"]]
)
def test_each_invalid_address_vector_is_refused_for_its_reason(vector: dict[str, str]) -> None:
    with pytest.raises(InvalidAddress) as caught:
        Address.parse(vector["address"])
    assert caught.value.reason == vector["reason"]
