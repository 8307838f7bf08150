"""Sealing and opening MMPKE01 files, in bounded memory.

Sealing: a fresh ephemeral X25519 key and a random 32-byte data key. For each recipient,
``wrap key = HKDF-SHA256(ikm = X25519(ephemeral, recipient), salt = ephemeral public key ||
recipient public key, info = "MMPKE01 wrap key", 32 bytes)`` and the data key is sealed
with AES-256-GCM under it (the recipient's 12-byte nonce; associated data
:func:`~fortemi.crypto.header.wrap_associated_data`).

The payload is chunked AEAD after the STREAM construction (Hoang, Reyhanitabar, Rogaway,
Vizár 2015, as in Tink's streaming AEAD and age): chunk ``i`` of ``chunk_size`` plaintext
bytes is AES-256-GCM under the data key with nonce ``data_nonce (7 bytes) || u32 big-endian
i || last`` (``last`` is 0x01 on the final chunk, else 0x00) and the whole preamble (magic,
length, exact header bytes) as associated data. Only the final chunk may be short; an empty
payload is one final chunk of only its tag. So a changed byte anywhere, a dropped, repeated
or reordered chunk and a file cut at a chunk boundary all fail authentication.

Opening releases a chunk's plaintext only once that chunk is authenticated; whoever streams
the plaintext out must discard it when a later chunk fails (the CLI writes to a temporary
file and renames it only at the end). :func:`open_bytes` returns nothing unless all passed.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from fortemi.crypto.errors import IntegrityError, MalformedFile, NotARecipient
from fortemi.crypto.header import (
    CHUNK_SIZE,
    DATA_NONCE_SIZE,
    KEY_SIZE,
    MAX_CHUNK_SIZE,
    MAX_RECIPIENTS,
    MIN_CHUNK_SIZE,
    TAG_SIZE,
    WRAP_NONCE_SIZE,
    Envelope,
    Recipient,
    Sink,
    Source,
    build_preamble,
    check_filename,
    read_envelope,
    wrap_associated_data,
)
from fortemi.crypto.keys import Keypair, PublicKey

__all__ = [
    "HKDF_INFO",
    "Opener",
    "SealSecrets",
    "Sealer",
    "open_bytes",
    "open_stream",
    "seal_bytes",
    "seal_stream",
]

HKDF_INFO = b"MMPKE01 wrap key"
Bytes = bytes | bytearray | memoryview
_COUNTER = struct.Struct(">I")
_MAX_CHUNKS = 1 << 32


@dataclass(frozen=True, slots=True)
class SealSecrets:
    """The random values of one sealing. Fresh from the OS for every file; fixed values
    are for the published test vectors only (reusing them with one data key breaks GCM)."""

    ephemeral_private_key: bytes
    data_key: bytes
    data_nonce: bytes
    wrap_nonces: tuple[bytes, ...]

    @classmethod
    def fresh(cls, recipients: int) -> SealSecrets:
        return cls(
            ephemeral_private_key=os.urandom(KEY_SIZE),
            data_key=os.urandom(KEY_SIZE),
            data_nonce=os.urandom(DATA_NONCE_SIZE),
            wrap_nonces=tuple(os.urandom(WRAP_NONCE_SIZE) for _ in range(recipients)),
        )


def wrap_key(shared_secret: bytes, ephemeral_public: bytes, recipient_public: bytes) -> bytes:
    return HKDF(
        algorithm=SHA256(),
        length=KEY_SIZE,
        salt=ephemeral_public + recipient_public,
        info=HKDF_INFO,
    ).derive(shared_secret)


def _chunk_nonce(prefix: bytes, index: int, *, last: bool) -> bytes:
    if index >= _MAX_CHUNKS:
        raise MalformedFile("header_too_large", "More than 2^32 chunks: the file is too large")
    return prefix + _COUNTER.pack(index) + (b"\x01" if last else b"\x00")


class _Pieces:
    """Cuts a stream of bytes into pieces of ``size``, holding back the newest piece until
    a byte after it arrives: until then it may be the last. Full pieces are views of the
    caller's bytes (no copy); only the held tail is copied."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._held = bytearray()

    def feed(self, data: Bytes) -> list[memoryview | bytearray]:
        view = memoryview(data)
        pieces: list[memoryview | bytearray] = []
        if self._held:
            need = self._size - len(self._held)
            if len(view) <= need:
                self._held += view
                return pieces
            self._held += view[:need]
            view = view[need:]
            pieces.append(self._held)
            self._held = bytearray()
        if view:
            complete = (len(view) - 1) // self._size
            pieces.extend(view[i * self._size : (i + 1) * self._size] for i in range(complete))
            self._held += view[complete * self._size :]
        return pieces

    def rest(self) -> bytearray:
        held, self._held = self._held, bytearray()
        return held


class Sealer:
    """Encrypts one file for some recipients: ``preamble``, then ``update``/``finalize``.

    Holds at most one chunk of plaintext, whatever the size of the file.
    """

    def __init__(
        self,
        recipients: Sequence[PublicKey],
        *,
        filename: str | None = None,
        chunk_size: int = CHUNK_SIZE,
        secrets: SealSecrets | None = None,
    ) -> None:
        if not 1 <= len(recipients) <= MAX_RECIPIENTS:
            raise ValueError(f"an MMPKE01 file has 1 to {MAX_RECIPIENTS} recipients")
        if len({r.address for r in recipients}) != len(recipients):
            raise ValueError("a recipient is named twice")
        if not MIN_CHUNK_SIZE <= chunk_size <= MAX_CHUNK_SIZE:
            raise ValueError(f"chunk_size is {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}")
        filename = check_filename(filename)
        secrets = secrets or SealSecrets.fresh(len(recipients))
        if len(secrets.wrap_nonces) != len(recipients):
            raise ValueError("one wrap nonce per recipient")
        ephemeral = X25519PrivateKey.from_private_bytes(secrets.ephemeral_private_key)
        ephemeral_public = ephemeral.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        pairs = list(zip(recipients, secrets.wrap_nonces, strict=True))
        associated = wrap_associated_data(
            ephemeral_public_key=ephemeral_public,
            recipients=[(r.address, n) for r, n in pairs],
            data_nonce=secrets.data_nonce,
            chunk_size=chunk_size,
            filename=filename,
        )
        entries = []
        for recipient, nonce in pairs:
            shared = ephemeral.exchange(recipient.x25519())
            key = wrap_key(shared, ephemeral_public, recipient.raw)
            wrapped = AESGCM(key).encrypt(nonce, secrets.data_key, associated)
            entries.append(Recipient(recipient.address, nonce, wrapped))
        self.preamble = build_preamble(
            ephemeral_public_key=ephemeral_public,
            recipients=entries,
            data_nonce=secrets.data_nonce,
            chunk_size=chunk_size,
            filename=filename,
        )
        if self.preamble[8:12] != associated[8:12]:  # pragma: no cover - a bug, not input
            raise RuntimeError("the header's length differs from the one its wraps cover")
        self._aead = AESGCM(secrets.data_key)
        self._nonce = secrets.data_nonce
        self._index = 0
        self._pieces = _Pieces(chunk_size)
        self._done = False

    def _seal(self, plaintext: memoryview | bytearray, *, last: bool) -> bytes:
        nonce = _chunk_nonce(self._nonce, self._index, last=last)
        self._index += 1
        return self._aead.encrypt(nonce, plaintext, self.preamble)

    def sealed_chunks(self, data: Bytes) -> list[bytes]:
        """Every complete chunk but the newest, sealed (the newest may turn out the last:
        a chunk is sealed as not-last only once a byte after it is known to exist)."""
        if self._done:
            raise ValueError("update() after finalize()")
        return [self._seal(piece, last=False) for piece in self._pieces.feed(data)]

    def update(self, data: Bytes) -> bytes:
        return b"".join(self.sealed_chunks(data))

    def finalize(self) -> bytes:
        if self._done:
            raise ValueError("finalize() twice")
        self._done = True
        return self._seal(self._pieces.rest(), last=True)


class Opener:
    """Decrypts one file's payload with the recipient's keypair: ``update``/``finalize``.

    Each chunk's plaintext is released only after its tag is checked; ``finalize`` raises
    :class:`IntegrityError` when the file was cut short, so an ``update`` output is final
    only once ``finalize`` returned.
    """

    def __init__(self, envelope: Envelope, keypair: Keypair) -> None:
        entry = envelope.recipient(keypair.address)
        if entry is None:
            listed = ", ".join(str(r.address) for r in envelope.recipients[:5])
            more = len(envelope.recipients) - 5
            raise NotARecipient(
                "not_a_recipient",
                f"The key {keypair.address} is not a recipient of this file; it was "
                f"encrypted for {listed}" + (f" and {more} more" if more > 0 else ""),
            )
        try:
            shared = keypair.x25519().exchange(
                X25519PublicKey.from_public_bytes(envelope.ephemeral_public_key)
            )
            key = wrap_key(shared, envelope.ephemeral_public_key, keypair.public.raw)
            data_key = AESGCM(key).decrypt(
                entry.nonce, entry.wrapped_key, envelope.wrap_associated_data
            )
        except (InvalidTag, ValueError):
            # ValueError: an ephemeral key of low order (an all-zero shared secret).
            raise IntegrityError(f"the data key wrapped for {keypair.address}") from None
        self.envelope = envelope
        self._aead = AESGCM(data_key)
        self._index = 0
        self._pieces = _Pieces(envelope.chunk_size + TAG_SIZE)
        self._done = False

    def _open(self, sealed: memoryview | bytearray, *, last: bool) -> bytes:
        nonce = _chunk_nonce(self.envelope.data_nonce, self._index, last=last)
        try:
            plaintext = self._aead.decrypt(nonce, sealed, self.envelope.preamble)
        except InvalidTag:
            where = f"chunk {self._index}" + (" (the last)" if last else "")
            raise IntegrityError(where) from None
        self._index += 1
        return plaintext

    def opened_chunks(self, data: Bytes) -> list[bytes]:
        if self._done:
            raise ValueError("update() after finalize()")
        return [self._open(piece, last=False) for piece in self._pieces.feed(data)]

    def update(self, data: Bytes) -> bytes:
        return b"".join(self.opened_chunks(data))

    def finalize(self) -> bytes:
        if self._done:
            raise ValueError("finalize() twice")
        self._done = True
        rest = self._pieces.rest()
        if len(rest) < TAG_SIZE:
            raise IntegrityError(f"chunk {self._index} is cut short")
        return self._open(rest, last=True)


_READ = 1024 * 1024


def seal_stream(
    source: Source,
    sink: Sink,
    recipients: Sequence[PublicKey],
    *,
    filename: str | None = None,
) -> int:
    """Encrypt ``source`` into ``sink``; returns the bytes written."""
    sealer = Sealer(recipients, filename=filename)
    written = 0
    for part in _sealed(sealer, source):
        sink.write(part)
        written += len(part)
    return written


def _sealed(sealer: Sealer, source: Source) -> Iterator[bytes]:
    yield sealer.preamble
    while block := source.read(_READ):
        yield from sealer.sealed_chunks(block)
    yield sealer.finalize()


def _payload(opener: Opener, source: Source) -> Iterator[bytes]:
    while block := source.read(_READ):
        yield from opener.opened_chunks(block)
    yield opener.finalize()


def open_stream(source: Source, sink: Sink, keypair: Keypair) -> Envelope:
    """Decrypt ``source`` into ``sink``. On an error, what ``sink`` got must be discarded."""
    opener = Opener(read_envelope(source), keypair)
    for part in _payload(opener, source):
        sink.write(part)
    return opener.envelope


def verify_stream(source: Source, keypair: Keypair) -> Envelope:
    """Authenticate a whole file without keeping its plaintext."""
    opener = Opener(read_envelope(source), keypair)
    for _ in _payload(opener, source):
        pass
    return opener.envelope


def seal_bytes(
    data: bytes,
    recipients: Sequence[PublicKey],
    *,
    filename: str | None = None,
    chunk_size: int = CHUNK_SIZE,
    secrets: SealSecrets | None = None,
) -> bytes:
    sealer = Sealer(recipients, filename=filename, chunk_size=chunk_size, secrets=secrets)
    return b"".join([sealer.preamble, *sealer.sealed_chunks(data), sealer.finalize()])


def open_bytes(data: bytes, keypair: Keypair) -> bytes:
    """The plaintext of a whole file in memory, only if every byte of it is authentic."""
    source = io.BytesIO(data)
    opener = Opener(read_envelope(source), keypair)
    payload = memoryview(data)[source.tell() :]
    return b"".join([*opener.opened_chunks(payload), opener.finalize()])
