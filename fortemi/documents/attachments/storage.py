"""Where attachment bytes live: a :class:`BlobStore`, addressed by memory and digest.

A blob's key is ``<memory>/<first two hex digits>/<BLAKE3 hex digest>``: the same bytes
attached twice in a memory are one object, and two memories never share one (deleting a
memory's blobs can never touch another's). Writes take a file already staged on local
disk (the upload was hashed while it was copied there), so no store ever holds a whole
file in memory; reads are iterators of bounded chunks.

* :class:`LocalBlobStore`: files under ``FORTEMI_HOME/blobs``, published by an atomic
  rename, so a reader never sees half a blob.
* :class:`S3BlobStore`: any S3-compatible object store through boto3 (its managed
  multipart transfer for large files), each blocking call in a worker thread.

Store failures are translated here, once, to :class:`~fortemi.platform.errors.Unavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fortemi.platform.database import validate_memory_name
from fortemi.platform.errors import NotFound, Unavailable
from fortemi.platform.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "CHUNK_BYTES",
    "BlobStore",
    "LocalBlobStore",
    "S3BlobStore",
    "blob_key",
    "build_blob_store",
    "staging_dir",
]

CHUNK_BYTES = 1024 * 1024


def blob_key(memory: str, digest: str) -> str:
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a BLAKE3 hex digest: {digest!r}")
    return f"{validate_memory_name(memory)}/{digest[:2]}/{digest}"


class BlobStore(Protocol):
    name: str

    async def put(self, memory: str, digest: str, staged: Path) -> None:
        """Store the file at ``staged`` (consumed: moved or deleted) as the blob."""

    async def exists(self, memory: str, digest: str) -> bool: ...

    def read(self, memory: str, digest: str) -> AsyncIterator[bytes]:
        """The blob's bytes in chunks of at most :data:`CHUNK_BYTES`; NotFound if absent."""

    async def read_all(self, memory: str, digest: str, limit: int) -> bytes:
        """The whole blob when it is at most ``limit`` bytes (extraction reads it so)."""

    async def delete(self, memory: str, digest: str) -> None:
        """Remove the blob; absent is fine (a sweep may be repeated)."""

    async def delete_memory(self, memory: str) -> None:
        """Remove every blob of a memory (once the memory itself is gone)."""


class LocalBlobStore:
    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, memory: str, digest: str) -> Path:
        return self.root / blob_key(memory, digest)

    async def put(self, memory: str, digest: str, staged: Path) -> None:
        target = self._path(memory, digest)
        try:
            await asyncio.to_thread(_publish, staged, target)
        except OSError as exc:
            raise Unavailable(f"cannot write blob {digest[:12]}: {exc.strerror}") from exc

    async def exists(self, memory: str, digest: str) -> bool:
        return await asyncio.to_thread(self._path(memory, digest).is_file)

    async def read(self, memory: str, digest: str) -> AsyncIterator[bytes]:
        path = self._path(memory, digest)
        try:
            handle = await asyncio.to_thread(path.open, "rb")
        except FileNotFoundError:
            raise NotFound(f"blob {digest[:12]} is missing from the store") from None
        try:
            while chunk := await asyncio.to_thread(handle.read, CHUNK_BYTES):
                yield chunk
        finally:
            handle.close()

    async def read_all(self, memory: str, digest: str, limit: int) -> bytes:
        path = self._path(memory, digest)
        try:
            with path.open("rb") as handle:
                return await asyncio.to_thread(handle.read, limit + 1)
        except FileNotFoundError:
            raise NotFound(f"blob {digest[:12]} is missing from the store") from None

    async def delete(self, memory: str, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(self._path(memory, digest).unlink)

    async def delete_memory(self, memory: str) -> None:
        folder = self.root / validate_memory_name(memory)
        await asyncio.to_thread(shutil.rmtree, folder, ignore_errors=True)


def _publish(staged: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():  # the same content: keep the one already published
        staged.unlink(missing_ok=True)
        return
    # The staging directory is on the same file system: the rename is atomic.
    os.replace(staged, target)


class S3BlobStore:
    name = "s3"

    def __init__(self, client: S3Client, bucket: str, prefix: str = "") -> None:
        self._client = client
        self._bucket = bucket
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    @classmethod
    def from_settings(cls, settings: Settings) -> S3BlobStore:
        import boto3
        from botocore.config import Config

        if not settings.s3_bucket:
            raise ValueError("FORTEMI_S3_BUCKET is required with FORTEMI_BLOB_STORE=s3")
        key = settings.s3_access_key_id
        secret = settings.s3_secret_access_key
        client = boto3.client(
            "s3",
            endpoint_url=settings.s3_endpoint_url,
            region_name=settings.s3_region,
            aws_access_key_id=key.get_secret_value() if key else None,
            aws_secret_access_key=secret.get_secret_value() if secret else None,
            config=Config(retries={"max_attempts": 3, "mode": "standard"}),
        )
        return cls(client, settings.s3_bucket, settings.s3_prefix)

    def _key(self, memory: str, digest: str) -> str:
        return self._prefix + blob_key(memory, digest)

    async def _call(self, what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return await asyncio.to_thread(function, *args, **kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("404", "NoSuchKey", "NotFound"):
                raise NotFound(f"blob is missing from the object store ({what})") from exc
            raise Unavailable(f"object store refused {what}: {code}") from exc
        except BotoCoreError as exc:
            raise Unavailable(f"object store unreachable ({what}): {type(exc).__name__}") from exc

    async def put(self, memory: str, digest: str, staged: Path) -> None:
        try:
            await self._call(
                "put",
                self._client.upload_file,
                str(staged),
                self._bucket,
                self._key(memory, digest),
            )
        finally:
            _discard(staged)

    async def exists(self, memory: str, digest: str) -> bool:
        try:
            await self._call(
                "head", self._client.head_object, Bucket=self._bucket, Key=self._key(memory, digest)
            )
        except NotFound:
            return False
        return True

    async def read(self, memory: str, digest: str) -> AsyncIterator[bytes]:
        answer = await self._call(
            "get", self._client.get_object, Bucket=self._bucket, Key=self._key(memory, digest)
        )
        body = answer["Body"]
        try:
            chunks: Iterator[bytes] = body.iter_chunks(CHUNK_BYTES)
            while chunk := await asyncio.to_thread(next, chunks, b""):
                yield chunk
        finally:
            body.close()

    async def read_all(self, memory: str, digest: str, limit: int) -> bytes:
        answer = await self._call(
            "get", self._client.get_object, Bucket=self._bucket, Key=self._key(memory, digest)
        )
        body = answer["Body"]
        try:
            data: bytes = await asyncio.to_thread(body.read, limit + 1)
            return data
        finally:
            body.close()

    async def delete(self, memory: str, digest: str) -> None:
        await self._call(
            "delete", self._client.delete_object, Bucket=self._bucket, Key=self._key(memory, digest)
        )

    async def delete_memory(self, memory: str) -> None:
        prefix = self._prefix + validate_memory_name(memory) + "/"
        while True:
            listed = await self._call(
                "list", self._client.list_objects_v2, Bucket=self._bucket, Prefix=prefix
            )
            keys = [{"Key": item["Key"]} for item in listed.get("Contents", [])]
            if not keys:
                return
            await self._call(
                "delete",
                self._client.delete_objects,
                Bucket=self._bucket,
                Delete={"Objects": keys, "Quiet": True},
            )


def _discard(path: Path) -> None:
    path.unlink(missing_ok=True)


def build_blob_store(settings: Settings) -> BlobStore:
    """``FORTEMI_BLOB_STORE``: ``local`` (default, under the data directory) or ``s3``."""
    if settings.blob_store == "s3":
        return S3BlobStore.from_settings(settings)
    return LocalBlobStore(settings.home / "blobs")


def staging_dir(settings: Settings) -> Path:
    """Where uploads are copied while hashed: beside the local store, so publishing is a
    rename on the same file system."""
    path = settings.home / "blobs" / ".staging"
    path.mkdir(parents=True, exist_ok=True)
    return path
