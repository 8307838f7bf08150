"""Attachment bytes in a shard: ``blobs/<digest>`` members, streamed both ways.

Export: the archive is written in a worker thread; each blob is read from the
:class:`~fortemi.documents.attachments.storage.BlobStore` (an async iterator of bounded
chunks) through :class:`StoreStream`, which asks the event loop for one chunk at a time,
so memory stays at a chunk whatever the blob's size. Import: each member is copied to a
staged file while its BLAKE3 is taken, and published to the target memory's store only if
the digest matches. Content addressing makes a second write of the same bytes harmless.
"""

from __future__ import annotations

import asyncio
import io
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import blake3

from fortemi.documents.attachments.storage import BlobStore
from fortemi.documents.shards.manifest import refused

__all__ = [
    "BLOB_MEMBER",
    "BlobBytes",
    "Readable",
    "StoreStream",
    "blob_member",
    "digest_of",
    "stage_blob",
]

BLOB_MEMBER = re.compile(r"^blobs/([0-9a-f]{64})$")
_COPY = 1024 * 1024


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def blob_member(digest: str) -> str:
    return f"blobs/{digest}"


@dataclass(frozen=True, slots=True)
class BlobBytes:
    """The store attachment bytes are read from and written to, and where imported bytes
    are staged (beside a local store, so publishing is a rename)."""

    store: BlobStore
    staging: Path


class StoreStream(io.RawIOBase):
    """A blocking, readable file of one blob, for a thread other than the event loop's:
    each read takes the next chunk of the store's async iterator through ``loop``. The
    blob must be exactly ``size`` bytes (the ``blob`` row's), else the export fails."""

    def __init__(
        self, chunks: AsyncIterator[bytes], size: int, loop: asyncio.AbstractEventLoop, name: str
    ) -> None:
        super().__init__()
        self._chunks, self._size, self._loop, self._name = chunks, size, loop, name
        self._pending = b""
        self._seen = 0
        self._done = False

    def readable(self) -> bool:
        return True

    def _next(self) -> bytes:
        future = asyncio.run_coroutine_threadsafe(_next_chunk(self._chunks), self._loop)
        return future.result()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._pending and not self._done:
            self._pending = self._next()
            self._seen += len(self._pending)
            if not self._pending:
                self._done = True
            if self._seen > self._size or (self._done and self._seen != self._size):
                raise RuntimeError(
                    f"blob {self._name[:12]} in the store is not the {self._size} bytes its "
                    "row records"
                )
        count = min(len(view), len(self._pending))
        view[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self) -> None:
        if not self.closed:
            closing = getattr(self._chunks, "aclose", None)
            if closing is not None:
                asyncio.run_coroutine_threadsafe(closing(), self._loop).result()
        super().close()


async def _next_chunk(chunks: AsyncIterator[bytes]) -> bytes:
    return await anext(chunks, b"")


def digest_of(source: Readable) -> tuple[str, int]:
    """BLAKE3 hex digest and size of what ``source`` holds, read in bounded chunks."""
    hasher, size = blake3.blake3(), 0
    while chunk := source.read(_COPY):
        hasher.update(chunk)
        size += len(chunk)
    return hasher.hexdigest(), size


def stage_blob(source: Readable, staging: Path, digest: str) -> Path:
    """Copy ``source`` to a file in ``staging``; refused (and removed) unless its BLAKE3
    is ``digest``: the bytes published are always the bytes the name promises."""
    staging.mkdir(parents=True, exist_ok=True)
    hasher = blake3.blake3()
    with tempfile.NamedTemporaryFile(dir=staging, prefix="shard-", delete=False) as out:
        path = Path(out.name)
        try:
            while chunk := source.read(_COPY):
                hasher.update(chunk)
                out.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    if hasher.hexdigest() != digest:
        path.unlink(missing_ok=True)
        raise refused(
            "shard_checksum_mismatch",
            f"blobs/{digest} does not hash to its name (BLAKE3): the shard is corrupt or "
            "was altered",
        )
    return path
