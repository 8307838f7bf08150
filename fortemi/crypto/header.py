"""The MMPKE01 preamble: magic, header length and the canonical JSON header.

::

    file     = "MMPKE01\\n" || u32 little-endian header length || header || payload
    header   = canonical JSON (see :mod:`fortemi.crypto.encoding`):
               {"chunk_size": 65536,
                "data_nonce": "<Base64, 7 bytes>",
                "ephemeral_public_key": "<Base64, 32 bytes>",
                "filename": "report.pdf" | null,
                "recipients": [{"address": "mm:...", "nonce": "<Base64, 12 bytes>",
                                "wrapped_key": "<Base64, 32 + 16 bytes>"}, ...],
                "version": 1}

A reader refuses a header that is not exactly the canonical form of what it holds: the
wraps' associated data is that form with the wrapped keys blanked, so writer and reader
must agree on it to the byte.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fortemi.crypto.addresses import Address
from fortemi.crypto.encoding import b64decode, b64encode, canonical_json, load_json_object
from fortemi.crypto.errors import InvalidAddress, MalformedFile

__all__ = [
    "CHUNK_SIZE",
    "FORMAT_VERSION",
    "MAGIC",
    "Envelope",
    "Recipient",
    "Sink",
    "Source",
    "read_envelope",
]

MAGIC = b"MMPKE01\n"
FORMAT_VERSION = 1
CHUNK_SIZE = 64 * 1024  # plaintext bytes per chunk, as this implementation writes
MIN_CHUNK_SIZE = 64
MAX_CHUNK_SIZE = 4 * 1024 * 1024  # a reader holds about two chunks in memory
MAX_HEADER = 1024 * 1024
MAX_RECIPIENTS = 1024
MAX_FILENAME = 1024
KEY_SIZE = 32
TAG_SIZE = 16
WRAP_NONCE_SIZE = 12
DATA_NONCE_SIZE = 7  # + 4-byte chunk counter + 1-byte last flag = the 12-byte GCM nonce
WRAPPED_SIZE = KEY_SIZE + TAG_SIZE
_LENGTH = struct.Struct("<I")
_FIELDS = {"chunk_size", "data_nonce", "ephemeral_public_key", "filename", "recipients", "version"}
_RECIPIENT_FIELDS = {"address", "nonce", "wrapped_key"}


class Source(Protocol):
    """What MMPKE01 bytes are read from: a binary file, a socket's reader, ``BytesIO``."""

    def read(self, size: int, /) -> bytes: ...


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


@dataclass(frozen=True, slots=True)
class Recipient:
    address: Address
    nonce: bytes
    wrapped_key: bytes


@dataclass(frozen=True, slots=True)
class Envelope:
    """A parsed preamble; ``preamble`` is its exact bytes, the payload's associated data."""

    ephemeral_public_key: bytes
    recipients: tuple[Recipient, ...]
    data_nonce: bytes
    chunk_size: int
    filename: str | None
    preamble: bytes
    wrap_associated_data: bytes

    def recipient(self, address: Address) -> Recipient | None:
        return next((r for r in self.recipients if r.address == address), None)


def _document(
    *,
    ephemeral_public_key: bytes,
    recipients: Sequence[tuple[Address, bytes, bytes | None]],
    data_nonce: bytes,
    chunk_size: int,
    filename: str | None,
) -> dict[str, Any]:
    return {
        "chunk_size": chunk_size,
        "data_nonce": b64encode(data_nonce),
        "ephemeral_public_key": b64encode(ephemeral_public_key),
        "filename": filename,
        "recipients": [
            {
                "address": str(address),
                "nonce": b64encode(nonce),
                "wrapped_key": b64encode(wrapped) if wrapped is not None else "",
            }
            for address, nonce, wrapped in recipients
        ],
        "version": FORMAT_VERSION,
    }


def wrap_associated_data(
    *,
    ephemeral_public_key: bytes,
    recipients: Sequence[tuple[Address, bytes]],
    data_nonce: bytes,
    chunk_size: int,
    filename: str | None,
) -> bytes:
    """What every wrap authenticates: magic || final length || header, wrapped keys blanked.

    A wrap cannot cover its own bytes; it covers everything else in the header, and the
    header's final length (each wrapped key is 64 Base64 characters, so it is known).
    """
    blank = canonical_json(
        _document(
            ephemeral_public_key=ephemeral_public_key,
            recipients=[(a, n, None) for a, n in recipients],
            data_nonce=data_nonce,
            chunk_size=chunk_size,
            filename=filename,
        )
    )
    final_length = len(blank) + len(recipients) * len(b64encode(bytes(WRAPPED_SIZE)))
    return MAGIC + _LENGTH.pack(final_length) + blank


def build_preamble(
    *,
    ephemeral_public_key: bytes,
    recipients: Sequence[Recipient],
    data_nonce: bytes,
    chunk_size: int,
    filename: str | None,
) -> bytes:
    header = canonical_json(
        _document(
            ephemeral_public_key=ephemeral_public_key,
            recipients=[(r.address, r.nonce, r.wrapped_key) for r in recipients],
            data_nonce=data_nonce,
            chunk_size=chunk_size,
            filename=filename,
        )
    )
    if len(header) > MAX_HEADER:
        raise MalformedFile(
            "header_too_large", f"The header would be {len(header)} bytes (at most {MAX_HEADER})"
        )
    return MAGIC + _LENGTH.pack(len(header)) + header


def check_filename(filename: str | None) -> str | None:
    if filename is None:
        return None
    if not filename or len(filename) > MAX_FILENAME or "\x00" in filename:
        raise ValueError("a filename is 1 to 1024 characters, without NUL")
    filename.encode("utf-8")  # lone surrogates are not Unicode text: UnicodeEncodeError
    return filename


def read_exact(source: Source, size: int) -> bytes:
    """``size`` bytes, or fewer only at the end of ``source``."""
    parts: list[bytes] = []
    wanted = size
    while wanted:
        part = source.read(wanted)
        if not part:
            break
        parts.append(part)
        wanted -= len(part)
    return b"".join(parts)


def read_envelope(source: Source) -> Envelope:
    """Read and check the preamble; ``source`` is left at the first payload byte."""
    magic = read_exact(source, len(MAGIC))
    if magic != MAGIC:
        if MAGIC.startswith(magic):
            raise MalformedFile("truncated", "The file ends inside its MMPKE01 signature")
        raise MalformedFile(
            "bad_magic", "Not an MMPKE01 file: it does not start with 'MMPKE01' and a newline"
        )
    length_bytes = read_exact(source, _LENGTH.size)
    if len(length_bytes) < _LENGTH.size:
        raise MalformedFile("truncated", "The file ends inside its header length")
    (length,) = _LENGTH.unpack(length_bytes)
    if length > MAX_HEADER:
        raise MalformedFile(
            "header_too_large",
            f"The header claims {length} bytes; at most {MAX_HEADER} are read "
            "(the length field is damaged, or this is not an MMPKE01 file)",
        )
    header = read_exact(source, length)
    if len(header) < length:
        raise MalformedFile(
            "truncated", f"The file ends inside its header ({len(header)} of {length} bytes)"
        )
    return parse_header(MAGIC + length_bytes + header, header)


def _malformed(detail: str) -> MalformedFile:
    return MalformedFile("header_malformed", f"The MMPKE01 header is malformed: {detail}")


def parse_header(preamble: bytes, header: bytes) -> Envelope:
    try:
        document = load_json_object(header)
    except ValueError as exc:
        raise _malformed(f"not a JSON object ({exc})") from None
    if "version" in document and document["version"] != FORMAT_VERSION:
        raise MalformedFile(
            "unsupported_version",
            f"The file is MMPKE01 version {document['version']!r}; this program reads "
            f"version {FORMAT_VERSION}",
        )
    if set(document) != _FIELDS:
        raise _malformed(f"its fields are {sorted(document)}, not {sorted(_FIELDS)}")
    try:
        envelope = _envelope(document, preamble)
    except (ValueError, TypeError, InvalidAddress) as exc:
        detail = exc.message if isinstance(exc, InvalidAddress) else str(exc)
        raise _malformed(detail) from None
    if canonical_json(document) != header:
        raise MalformedFile(
            "header_not_canonical",
            "The MMPKE01 header is not in canonical form (sorted keys, no spaces, UTF-8): it "
            "was re-written after encryption",
        )
    return envelope


def _envelope(document: dict[str, Any], preamble: bytes) -> Envelope:
    chunk_size = document["chunk_size"]
    if type(chunk_size) is not int or not MIN_CHUNK_SIZE <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(f"chunk_size {chunk_size!r} is not {MIN_CHUNK_SIZE}-{MAX_CHUNK_SIZE}")
    filename = document["filename"]
    if filename is not None and not isinstance(filename, str):
        raise ValueError("filename is neither a string nor null")
    check_filename(filename)
    entries = document["recipients"]
    if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_RECIPIENTS:
        raise ValueError(f"recipients is not a list of 1 to {MAX_RECIPIENTS}")
    recipients: list[Recipient] = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != _RECIPIENT_FIELDS:
            raise ValueError(f"a recipient is not an object of {sorted(_RECIPIENT_FIELDS)}")
        if not isinstance(entry["address"], str):
            raise ValueError("a recipient's address is not a string")
        recipients.append(
            Recipient(
                address=Address.parse(entry["address"]),
                nonce=b64decode(entry["nonce"], length=WRAP_NONCE_SIZE),
                wrapped_key=b64decode(entry["wrapped_key"], length=WRAPPED_SIZE),
            )
        )
    if len({r.address for r in recipients}) != len(recipients):
        raise ValueError("a recipient appears twice")
    ephemeral = b64decode(document["ephemeral_public_key"], length=KEY_SIZE)
    data_nonce = b64decode(document["data_nonce"], length=DATA_NONCE_SIZE)
    return Envelope(
        ephemeral_public_key=ephemeral,
        recipients=tuple(recipients),
        data_nonce=data_nonce,
        chunk_size=chunk_size,
        filename=filename,
        preamble=preamble,
        wrap_associated_data=wrap_associated_data(
            ephemeral_public_key=ephemeral,
            recipients=[(r.address, r.nonce) for r in recipients],
            data_nonce=data_nonce,
            chunk_size=chunk_size,
            filename=filename,
        ),
    )
