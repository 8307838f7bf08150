"""An upload copied to local disk in bounded chunks, hashed with BLAKE3 on the way.

Memory stays at one chunk whatever the file's size; the copy stops at the first chunk
past the limit and the partial file is removed, so an oversized upload leaves nothing
behind (``file_too_large`` comes before anything is stored).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Protocol

import blake3

from fortemi.documents.attachments.models import StagedFile
from fortemi.documents.attachments.storage import CHUNK_BYTES
from fortemi.documents.detection import PREFIX_BYTES
from fortemi.platform.errors import BadUserInput

__all__ = ["Readable", "discard", "stage", "too_large"]


class Readable(Protocol):
    """An upload as the web framework hands it (Starlette's ``UploadFile``)."""

    async def read(self, size: int = -1) -> bytes: ...


def discard(path: Path) -> None:
    """Remove a staged file (published, refused or failed); absent is fine."""
    path.unlink(missing_ok=True)


def too_large(limit: int, filename: str | None = None) -> BadUserInput:
    shown = f"{filename!r} is" if filename else "The file is"
    return BadUserInput(
        f"{shown} over the {limit}-byte upload limit (FORTEMI_MAX_UPLOAD_BYTES); split it or "
        "ask an operator to raise the limit",
        reason="file_too_large",
        field="file",
        limit=limit,
    )


async def stage(source: Readable, directory: Path, limit: int, filename: str | None) -> StagedFile:
    """Copy ``source`` into a new file in ``directory``; BadUserInput ``file_too_large``
    past ``limit`` bytes (the partial copy removed)."""
    hasher = blake3.blake3()
    size = 0
    prefix = b""
    handle = tempfile.NamedTemporaryFile(dir=directory, prefix="upload-", delete=False)
    path = Path(handle.name)
    try:
        with handle:
            while chunk := await source.read(CHUNK_BYTES):
                size += len(chunk)
                if size > limit:
                    raise too_large(limit, filename)
                if len(prefix) < PREFIX_BYTES:
                    prefix += chunk[: PREFIX_BYTES - len(prefix)]
                hasher.update(chunk)
                await asyncio.to_thread(handle.write, chunk)
    except BaseException:
        discard(path)
        raise
    return StagedFile(path=path, digest=hasher.hexdigest(), size=size, prefix=prefix)
