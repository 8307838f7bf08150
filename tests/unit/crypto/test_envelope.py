"""The MMPKE01 envelope: round trips, recipients, and every kind of tampering refused."""

from __future__ import annotations

import io
import json
import os
import struct
import tracemalloc

import pytest

from fortemi.crypto.encoding import canonical_json
from fortemi.crypto.envelope import (
    Opener,
    Sealer,
    SealSecrets,
    open_bytes,
    open_stream,
    seal_bytes,
    seal_stream,
    verify_stream,
)
from fortemi.crypto.errors import IntegrityError, MalformedFile, NotARecipient, PkeError
from fortemi.crypto.header import CHUNK_SIZE, MAGIC, TAG_SIZE, read_envelope
from fortemi.crypto.keys import Keypair


@pytest.fixture(scope="module")
def people() -> list[Keypair]:
    return [Keypair.generate() for _ in range(4)]


def _preamble_length(sealed: bytes) -> int:
    (length,) = struct.unpack("<I", sealed[8:12])
    return 12 + int(length)


def _chunks(sealed: bytes, chunk_size: int) -> tuple[bytes, list[bytes]]:
    start = _preamble_length(sealed)
    size = chunk_size + TAG_SIZE
    payload = sealed[start:]
    return sealed[:start], [payload[i : i + size] for i in range(0, len(payload), size)]


def test_one_recipient_reads_what_was_sealed(people: list[Keypair]) -> None:
    data = os.urandom(1000)
    sealed = seal_bytes(data, [people[0].public], filename="notes.txt")
    assert sealed.startswith(MAGIC)
    assert open_bytes(sealed, people[0]) == data
    assert read_envelope(io.BytesIO(sealed)).filename == "notes.txt"


def test_each_of_three_recipients_reads_what_was_sealed(people: list[Keypair]) -> None:
    data = os.urandom(5000)
    sealed = seal_bytes(data, [p.public for p in people[:3]], filename="team.bin")
    envelope = read_envelope(io.BytesIO(sealed))
    assert [r.address for r in envelope.recipients] == [p.address for p in people[:3]]
    for person in people[:3]:
        assert open_bytes(sealed, person) == data


def test_a_key_that_is_not_a_recipient_is_refused_by_name(people: list[Keypair]) -> None:
    sealed = seal_bytes(b"secret", [p.public for p in people[:2]])
    with pytest.raises(NotARecipient) as caught:
        open_bytes(sealed, people[3])
    assert caught.value.reason == "not_a_recipient"
    assert str(people[3].address) in caught.value.message
    assert str(people[0].address) in caught.value.message


def test_an_empty_file_round_trips_as_one_tag(people: list[Keypair]) -> None:
    sealed = seal_bytes(b"", [people[0].public])
    assert len(sealed) == _preamble_length(sealed) + TAG_SIZE
    assert open_bytes(sealed, people[0]) == b""


def test_recipients_are_refused_twice_and_beyond_none(people: list[Keypair]) -> None:
    with pytest.raises(ValueError, match="twice"):
        seal_bytes(b"x", [people[0].public, people[0].public])
    with pytest.raises(ValueError, match="1 to"):
        seal_bytes(b"x", [])


def test_every_changed_byte_of_a_file_is_detected_and_no_plaintext_returned(
    people: list[Keypair],
) -> None:
    data = b"The quarterly numbers, before anyone else sees them." * 3
    sealed = seal_bytes(
        data, [people[0].public, people[1].public], filename="q3.txt", chunk_size=64
    )
    assert len(_chunks(sealed, 64)[1]) == 3
    reasons: dict[str, int] = {}
    for position in range(len(sealed)):
        for flip in (0x01, 0x80, 0xFF):
            tampered = bytearray(sealed)
            tampered[position] ^= flip
            with pytest.raises(PkeError) as caught:
                open_bytes(bytes(tampered), people[0])
            assert caught.value.message
            reasons[caught.value.reason] = reasons.get(caught.value.reason, 0) + 1
    assert sum(reasons.values()) == 3 * len(sealed)
    assert reasons.get("integrity", 0) > 0
    assert set(reasons) <= {
        "integrity",
        "bad_magic",
        "truncated",
        "header_too_large",
        "header_malformed",
        "header_not_canonical",
        "unsupported_version",
        "not_a_recipient",
    }


def test_a_file_larger_than_a_chunk_streams_through_in_bounded_memory(
    people: list[Keypair],
) -> None:
    size = 32 * 1024 * 1024  # 512 chunks

    class Zeros:
        """A file of zeros that is never in memory at once."""

        def __init__(self) -> None:
            self.left = size

        def read(self, wanted: int, /) -> bytes:
            n = min(wanted, self.left)
            self.left -= n
            return bytes(n)

    class Count:
        def __init__(self) -> None:
            self.written = 0

        def write(self, data: bytes, /) -> int:
            self.written += len(data)
            return len(data)

    sink = Count()
    tracemalloc.start()
    try:
        seal_stream(Zeros(), sink, [people[0].public], filename="zeros")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    chunks = size // CHUNK_SIZE
    assert sink.written > size + chunks * TAG_SIZE
    # Bounded by the read block and one chunk, a quarter of the file at most here.
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes while sealing {size}"


def test_a_multi_chunk_file_round_trips_through_streams(people: list[Keypair]) -> None:
    data = os.urandom(3 * CHUNK_SIZE + 123)
    sealed = io.BytesIO()
    seal_stream(io.BytesIO(data), sealed, [people[0].public, people[1].public], filename="big")
    out = io.BytesIO()
    envelope = open_stream(io.BytesIO(sealed.getvalue()), out, people[1])
    assert out.getvalue() == data
    assert envelope.chunk_size == CHUNK_SIZE
    assert len(_chunks(sealed.getvalue(), CHUNK_SIZE)[1]) == 4


def test_a_payload_of_whole_chunks_has_no_empty_final_chunk(people: list[Keypair]) -> None:
    data = os.urandom(2 * 64)
    sealed = seal_bytes(data, [people[0].public], chunk_size=64)
    assert [len(c) for c in _chunks(sealed, 64)[1]] == [80, 80]
    assert open_bytes(sealed, people[0]) == data


@pytest.mark.parametrize("piece", [1, 37, 63, 64, 65, 200, 1000])
def test_fed_in_any_pieces_the_sealer_and_opener_give_the_same_bytes(
    people: list[Keypair], piece: int
) -> None:
    data = os.urandom(1000)
    secrets = SealSecrets.fresh(1)
    whole = seal_bytes(data, [people[0].public], chunk_size=64, secrets=secrets)
    sealer = Sealer([people[0].public], chunk_size=64, secrets=secrets)
    parts = [sealer.preamble]
    for start in range(0, len(data), piece):
        parts.append(sealer.update(data[start : start + piece]))
    parts.append(sealer.finalize())
    assert b"".join(parts) == whole
    source = io.BytesIO(whole)
    opener = Opener(read_envelope(source), people[0])
    payload = source.read()
    plain = [opener.update(payload[i : i + piece]) for i in range(0, len(payload), piece)]
    assert b"".join(plain) + opener.finalize() == data


@pytest.mark.parametrize(
    "change",
    [
        "drop the last chunk",
        "drop a middle chunk",
        "swap two chunks",
        "repeat a chunk",
        "cut inside the last chunk",
        "append a byte",
        "append a chunk",
    ],
)
def test_dropped_reordered_repeated_or_cut_chunks_are_detected(
    people: list[Keypair], change: str
) -> None:
    data = os.urandom(5 * 64 + 10)
    sealed = seal_bytes(data, [people[0].public], chunk_size=64)
    preamble, chunks = _chunks(sealed, 64)
    assert len(chunks) == 6
    if change == "drop the last chunk":
        chunks = chunks[:-1]
    elif change == "drop a middle chunk":
        del chunks[2]
    elif change == "swap two chunks":
        chunks[1], chunks[2] = chunks[2], chunks[1]
    elif change == "repeat a chunk":
        chunks.insert(3, chunks[3])
    elif change == "cut inside the last chunk":
        chunks[-1] = chunks[-1][:-1]
    elif change == "append a byte":
        chunks.append(b"\x00")
    else:
        chunks.append(chunks[0])
    with pytest.raises(IntegrityError) as caught:
        open_bytes(preamble + b"".join(chunks), people[0])
    assert caught.value.reason == "integrity"
    with pytest.raises(IntegrityError):
        verify_stream(io.BytesIO(preamble + b"".join(chunks)), people[0])


def test_a_file_cut_at_any_length_is_refused(people: list[Keypair]) -> None:
    sealed = seal_bytes(os.urandom(200), [people[0].public], chunk_size=64)
    for length in range(len(sealed)):
        with pytest.raises(PkeError) as caught:
            open_bytes(sealed[:length], people[0])
        assert caught.value.reason in {"truncated", "bad_magic", "integrity"}


def _with_header(sealed: bytes, header: bytes) -> bytes:
    return MAGIC + struct.pack("<I", len(header)) + header + sealed[_preamble_length(sealed) :]


def test_a_header_rewritten_in_another_json_form_is_refused(people: list[Keypair]) -> None:
    sealed = seal_bytes(b"x", [people[0].public])
    document = json.loads(sealed[12 : _preamble_length(sealed)])
    with pytest.raises(MalformedFile) as caught:
        open_bytes(_with_header(sealed, json.dumps(document).encode()), people[0])
    assert caught.value.reason == "header_not_canonical"


def test_a_later_format_version_is_named_as_such(people: list[Keypair]) -> None:
    sealed = seal_bytes(b"x", [people[0].public])
    document = json.loads(sealed[12 : _preamble_length(sealed)])
    document["version"] = 2
    with pytest.raises(MalformedFile, match="version 2") as caught:
        open_bytes(_with_header(sealed, canonical_json(document)), people[0])
    assert caught.value.reason == "unsupported_version"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "truncated"),
        (b"MMPKE0", "truncated"),
        (b"%PDF-1.7\n", "bad_magic"),
        (MAGIC + b"\x01\x00", "truncated"),
        (MAGIC + struct.pack("<I", 1 << 30), "header_too_large"),
        (MAGIC + struct.pack("<I", 10) + b"{}", "truncated"),
        (MAGIC + struct.pack("<I", 2) + b"{}", "header_malformed"),
        (MAGIC + struct.pack("<I", 2) + b"[]", "header_malformed"),
    ],
)
def test_what_is_not_an_mmpke01_file_is_refused_with_its_reason(
    people: list[Keypair], data: bytes, reason: str
) -> None:
    with pytest.raises(MalformedFile) as caught:
        open_bytes(data, people[0])
    assert caught.value.reason == reason
