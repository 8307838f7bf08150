"""MMPKE01 encryption and decryption throughput, beside raw AES-256-GCM on the same bytes.

``python -m benchmarks.pke [--sizes 1,64] [--rounds R] [--recipients N]``

For each size (MiB of random bytes), in the same run and on the same buffer: one
``AESGCM.encrypt``/``decrypt`` call over the whole buffer (the floor: no framing, no
chunking, the whole plaintext and ciphertext in memory); the same bytes as 64 KiB
``AESGCM`` calls (the chunking alone); and MMPKE01 through :func:`seal_bytes` /
:func:`open_bytes` and through the streaming path (:func:`seal_stream` /
:func:`open_stream`, ``BytesIO`` in and out), each for N recipients (their X25519 and HKDF
work is per file, not per byte). The best of R rounds is printed in MiB/s.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from benchmarks._common import _git_commit, print_setup, table
from fortemi.crypto.envelope import open_bytes, open_stream, seal_bytes, seal_stream
from fortemi.crypto.header import CHUNK_SIZE
from fortemi.crypto.keys import Keypair

MIB = 1024 * 1024


def _best(rounds: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def _chunked(aead: AESGCM, data: bytes, *, seal: bool) -> bytes:
    step = CHUNK_SIZE + (0 if seal else 16)
    nonce = bytes(12)
    view = memoryview(data)
    run = aead.encrypt if seal else aead.decrypt
    return b"".join(run(nonce, view[i : i + step], None) for i in range(0, len(data), step))


def _measure(size: int, rounds: int, people: list[Keypair]) -> list[tuple[str, ...]]:
    data = os.urandom(size * MIB)
    publics = [p.public for p in people]
    reader = people[-1]
    aead = AESGCM(AESGCM.generate_key(bit_length=256))
    nonce = os.urandom(12)
    whole = aead.encrypt(nonce, data, None)
    chunks = _chunked(aead, data, seal=True)
    sealed = seal_bytes(data, publics, filename="bench.bin")
    assert open_bytes(sealed, reader) == data
    sink = io.BytesIO()
    open_stream(io.BytesIO(sealed), sink, reader)
    assert sink.getvalue() == data

    def stream_seal() -> object:
        return seal_stream(io.BytesIO(data), io.BytesIO(), publics, filename="bench.bin")

    def stream_open() -> object:
        return open_stream(io.BytesIO(sealed), io.BytesIO(), reader)

    paths: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("AESGCM, one call (baseline)",
         lambda: aead.encrypt(nonce, data, None), lambda: aead.decrypt(nonce, whole, None)),
        ("AESGCM, 64 KiB calls",
         lambda: _chunked(aead, data, seal=True), lambda: _chunked(aead, chunks, seal=False)),
        ("MMPKE01 seal_bytes/open_bytes",
         lambda: seal_bytes(data, publics), lambda: open_bytes(sealed, reader)),
        ("MMPKE01 seal_stream/open_stream", stream_seal, stream_open),
    ]  # fmt: skip
    rows: list[tuple[str, ...]] = []
    base: tuple[float, float] | None = None
    for name, encrypt, decrypt in paths:
        enc, dec = size / _best(rounds, encrypt), size / _best(rounds, decrypt)
        base = base or (enc, dec)
        rows.append(
            (f"{size} MiB", name, f"{enc:.0f}", f"{enc / base[0]:.2f}", f"{dec:.0f}",
             f"{dec / base[1]:.2f}")
        )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pke", description=__doc__)
    parser.add_argument("--sizes", default="1,64", help="MiB per file, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--recipients", type=int, default=1)
    args = parser.parse_args()
    people = [Keypair.generate() for _ in range(args.recipients)]
    cpus = os.cpu_count()
    print_setup(
        "pke",
        [
            ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
            ("commit", _git_commit()),
            ("machine", f"{platform.machine()}, {platform.platform(terse=True)}, {cpus} CPUs"),
            ("python", f"{platform.python_implementation()} {platform.python_version()}"),
            ("packages", f"cryptography {importlib.metadata.version('cryptography')}"),
            ("workload", f"random bytes; {args.recipients} recipient(s); best of "
                         f"{args.rounds} rounds; chunks of {CHUNK_SIZE // 1024} KiB"),
        ],
    )  # fmt: skip
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = [row for size in sizes for row in _measure(size, args.rounds, people)]
    print(
        table(
            ["size", "path", "encrypt MiB/s", "x base", "decrypt MiB/s", "x base"],
            rows,
            "llrrrr",
        )
    )


if __name__ == "__main__":
    main()
