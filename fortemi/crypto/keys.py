"""X25519 keypairs and their files: a public key file, and a private key file sealed with a
passphrase (Argon2id + AES-256-GCM).

Public key file (``*.pub``), canonical JSON and a newline::

    {"address":"mm:...","format":"mmpke-public-key","public_key":"<Base64, 32 bytes>","version":1}

Private key file, canonical JSON and a newline::

    {"address":"mm:...","cipher":{"name":"aes-256-gcm","nonce":"<Base64, 12 bytes>"},
     "encrypted_private_key":"<Base64, 32 + 16 bytes>","format":"mmpke-private-key",
     "kdf":{"memory_kib":65536,"name":"argon2id","parallelism":4,"salt":"<Base64, 16 bytes>",
            "time_cost":3},
     "public_key":"<Base64, 32 bytes>","version":1}

The key that seals the private key is Argon2id (version 0x13) of the passphrase (NFC, then
UTF-8) with the file's salt and costs, 32 bytes. The AES-256-GCM associated data is the
canonical JSON of the file without ``encrypted_private_key``, so a changed address, public
key, salt or cost fails like a wrong passphrase; the opened private key must also derive the
file's public key.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argon2.exceptions import HashingError
from argon2.low_level import Type, hash_secret_raw
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from fortemi.crypto.addresses import Address
from fortemi.crypto.encoding import b64decode, b64encode, canonical_json, load_json_object
from fortemi.crypto.errors import InvalidKeyFile, WeakPassphrase, WrongPassphrase

__all__ = [
    "ARGON2ID_DEFAULT",
    "MIN_PASSPHRASE_CHARS",
    "Argon2idCost",
    "Keypair",
    "PublicKey",
    "check_passphrase",
    "lock_private_key",
    "parse_public_key",
    "public_key_file",
    "read_private_key_file",
    "read_public_key_file",
    "unlock_private_key",
    "write_private_key_file",
    "write_public_key_file",
]

PUBLIC_FORMAT = "mmpke-public-key"
PRIVATE_FORMAT = "mmpke-private-key"
KEY_FILE_VERSION = 1
MIN_PASSPHRASE_CHARS = 12
_SALT = 16
_NONCE = 12
_KEY = 32


@dataclass(frozen=True, slots=True)
class Argon2idCost:
    time_cost: int
    memory_kib: int
    parallelism: int

    # What a key file may ask of the machine that opens it: a hostile file must not take
    # all its memory or hours of work. The floor is RFC 9106's lowest recommended memory.
    def check(self) -> None:
        if not (
            1 <= self.time_cost <= 16
            and 8 * 1024 <= self.memory_kib <= 1024 * 1024
            and 1 <= self.parallelism <= 16
        ):
            raise InvalidKeyFile(
                "key_file_cost",
                f"The key file asks for Argon2id time {self.time_cost}, memory "
                f"{self.memory_kib} KiB, parallelism {self.parallelism}: outside what this "
                "program accepts (time 1-16, memory 8 MiB-1 GiB, parallelism 1-16)",
            )


# RFC 9106 section 4, the second recommended option (for when 2 GiB is too much memory):
# t=3, m=64 MiB, p=4.
ARGON2ID_DEFAULT = Argon2idCost(time_cost=3, memory_kib=64 * 1024, parallelism=4)


@dataclass(frozen=True, slots=True)
class PublicKey:
    raw: bytes  # 32 bytes

    @property
    def address(self) -> Address:
        return Address.of_public_key(self.raw)

    def x25519(self) -> X25519PublicKey:
        return X25519PublicKey.from_public_bytes(self.raw)


@dataclass(frozen=True, slots=True)
class Keypair:
    """An X25519 private key with its public key; lives only on the user's machine."""

    private: bytes  # 32 bytes
    public: PublicKey

    @classmethod
    def generate(cls) -> Keypair:
        return cls.from_private_bytes(
            X25519PrivateKey.generate().private_bytes_raw(),
        )

    @classmethod
    def from_private_bytes(cls, private: bytes) -> Keypair:
        key = X25519PrivateKey.from_private_bytes(private)
        public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cls(private=private, public=PublicKey(public))

    @property
    def address(self) -> Address:
        return self.public.address

    def x25519(self) -> X25519PrivateKey:
        return X25519PrivateKey.from_private_bytes(self.private)

    def __repr__(self) -> str:  # never print the private key
        return f"Keypair(address={self.address})"


def check_passphrase(passphrase: str) -> bytes:
    """The passphrase's bytes for Argon2id (NFC, UTF-8), refusing fewer than 12 characters."""
    normal = unicodedata.normalize("NFC", passphrase)
    if len(normal) < MIN_PASSPHRASE_CHARS:
        raise WeakPassphrase(
            "passphrase_too_short",
            f"The passphrase has {len(normal)} characters; use at least "
            f"{MIN_PASSPHRASE_CHARS} (a few words are easier to remember than symbols)",
        )
    return normal.encode("utf-8")


def _seal_key(passphrase: bytes, salt: bytes, cost: Argon2idCost) -> bytes:
    try:
        return hash_secret_raw(
            passphrase,
            salt,
            time_cost=cost.time_cost,
            memory_cost=cost.memory_kib,
            parallelism=cost.parallelism,
            hash_len=_KEY,
            type=Type.ID,
            version=19,
        )
    except HashingError as exc:  # pragma: no cover - only out of memory
        raise InvalidKeyFile("key_file_cost", f"Argon2id failed: {exc}") from exc


def _public_fields(public: PublicKey) -> dict[str, Any]:
    return {"address": str(public.address), "public_key": b64encode(public.raw)}


def lock_private_key(
    keypair: Keypair,
    passphrase: str,
    *,
    cost: Argon2idCost = ARGON2ID_DEFAULT,
    random: Callable[[int], bytes] = os.urandom,
) -> bytes:
    """The private key file's bytes. ``random`` is replaceable for the test vectors only."""
    secret = check_passphrase(passphrase)
    salt, nonce = random(_SALT), random(_NONCE)
    document: dict[str, Any] = {
        **_public_fields(keypair.public),
        "cipher": {"name": "aes-256-gcm", "nonce": b64encode(nonce)},
        "format": PRIVATE_FORMAT,
        "kdf": {
            "memory_kib": cost.memory_kib,
            "name": "argon2id",
            "parallelism": cost.parallelism,
            "salt": b64encode(salt),
            "time_cost": cost.time_cost,
        },
        "version": KEY_FILE_VERSION,
    }
    sealed = AESGCM(_seal_key(secret, salt, cost)).encrypt(
        nonce, keypair.private, canonical_json(document)
    )
    document["encrypted_private_key"] = b64encode(sealed)
    return canonical_json(document) + b"\n"


def _malformed(what: str) -> InvalidKeyFile:
    return InvalidKeyFile("key_file_malformed", f"Not an MMPKE01 key file: {what}")


def _document(data: bytes, expected_format: str) -> dict[str, Any]:
    try:
        document = load_json_object(data.rstrip(b"\r\n"))
    except ValueError:
        raise _malformed("it is not a JSON object") from None
    found = document.get("format")
    if found != expected_format:
        what = {PUBLIC_FORMAT: "a public key", PRIVATE_FORMAT: "a private key"}
        raise _malformed(
            f"it is {what.get(str(found), 'something else')}, where {what[expected_format]} "
            "file was expected"
        )
    if document.get("version") != KEY_FILE_VERSION:
        raise _malformed(f"version {document.get('version')!r} (this program reads 1)")
    return document


def _public_key(document: dict[str, Any]) -> PublicKey:
    try:
        public = PublicKey(b64decode(document.get("public_key"), length=_KEY))
    except ValueError as exc:
        raise _malformed(f"public_key: {exc}") from None
    if document.get("address") != str(public.address):
        raise InvalidKeyFile(
            "key_file_mismatch",
            f"The key file's address {document.get('address')!r} is not its public key's "
            f"({public.address}): the file was edited",
        )
    return public


def parse_public_key(data: bytes) -> PublicKey:
    document = _document(data, PUBLIC_FORMAT)
    if set(document) != {"address", "format", "public_key", "version"}:
        raise _malformed(f"unexpected fields {sorted(document)}")
    return _public_key(document)


def unlock_private_key(data: bytes, passphrase: str) -> Keypair:
    """The keypair in a private key file, or why not (malformed, cost, passphrase)."""
    document = _document(data, PRIVATE_FORMAT)
    expected = {"address", "cipher", "encrypted_private_key", "format", "kdf", "public_key"}
    if set(document) != expected | {"version"}:
        raise _malformed(f"unexpected fields {sorted(document)}")
    public = _public_key(document)
    kdf, cipher = document["kdf"], document["cipher"]
    try:
        if not isinstance(kdf, dict) or kdf.get("name") != "argon2id":
            raise ValueError("kdf is not argon2id")
        if not isinstance(cipher, dict) or cipher.get("name") != "aes-256-gcm":
            raise ValueError("cipher is not aes-256-gcm")
        if set(kdf) != {"memory_kib", "name", "parallelism", "salt", "time_cost"}:
            raise ValueError(f"kdf fields {sorted(kdf)}")
        if set(cipher) != {"name", "nonce"}:
            raise ValueError(f"cipher fields {sorted(cipher)}")
        costs = (kdf["time_cost"], kdf["memory_kib"], kdf["parallelism"])
        if not all(type(c) is int for c in costs):
            raise ValueError("Argon2id costs are not integers")
        cost = Argon2idCost(*costs)
        salt = b64decode(kdf["salt"], length=_SALT)
        nonce = b64decode(cipher["nonce"], length=_NONCE)
        sealed = b64decode(document["encrypted_private_key"], length=_KEY + 16)
    except ValueError as exc:
        raise _malformed(str(exc)) from None
    cost.check()
    secret = check_passphrase(passphrase)
    associated = canonical_json({k: v for k, v in document.items() if k != "encrypted_private_key"})
    try:
        private = AESGCM(_seal_key(secret, salt, cost)).decrypt(nonce, sealed, associated)
    except InvalidTag:
        raise WrongPassphrase from None
    keypair = Keypair.from_private_bytes(private)
    if keypair.public != public:
        raise InvalidKeyFile(
            "key_file_mismatch", "The private key does not match the file's public key"
        )
    return keypair


def public_key_file(public: PublicKey) -> bytes:
    document = {**_public_fields(public), "format": PUBLIC_FORMAT, "version": KEY_FILE_VERSION}
    return canonical_json(document) + b"\n"


def write_public_key_file(path: Path, public: PublicKey) -> None:
    _write_new(path, public_key_file(public), mode=0o644)


def write_private_key_file(path: Path, locked: bytes) -> None:
    _write_new(path, locked, mode=0o600)


def _write_new(path: Path, data: bytes, *, mode: int) -> None:
    # O_EXCL: a key file is never overwritten (losing a private key loses every file sealed
    # for it); the mode is set at creation, so the private key is never readable by others.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as file:
        file.write(data)


def read_public_key_file(path: Path) -> PublicKey:
    return parse_public_key(_read_small(path))


def read_private_key_file(path: Path, passphrase: str) -> Keypair:
    return unlock_private_key(_read_small(path), passphrase)


def _read_small(path: Path) -> bytes:
    with path.open("rb") as file:
        data = file.read(64 * 1024 + 1)
    if len(data) > 64 * 1024:
        raise _malformed(f"{path} is larger than any key file")
    return data
