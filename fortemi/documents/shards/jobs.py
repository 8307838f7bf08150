"""The ``ShardExport`` and ``ShardImport`` jobs (GraphQL ``exportShard`` / ``importShard``).

An export writes ``<FORTEMI_HOME>/shards/<job id>.shard`` (the file appears only once
complete); an import reads the shard an earlier export job wrote on this server, so no
path a client names is ever opened. Whoever submits either job was checked for memory
``admin`` (on both memories for an import) by the resolver, which the audit log records.
A refused shard fails the job with the refusal's stable reason as its failure code.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast
from uuid import UUID

from fortemi.crypto.service import EncryptionService
from fortemi.documents.shards.service import ImportOptions, ShardService
from fortemi.platform.errors import FortemiError
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobSpec, JobType, Tier

__all__ = [
    "SHARD_EXPORT",
    "SHARD_IMPORT",
    "ShardFiles",
    "export_spec",
    "import_spec",
    "shard_job_types",
]

SHARD_EXPORT = "ShardExport"
SHARD_IMPORT = "ShardImport"


class ShardFiles:
    """Where the server keeps the shards its export jobs wrote."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def under(cls, home: Path | str) -> ShardFiles:
        """The shards folder of a data directory (``FORTEMI_HOME``)."""
        return cls(Path(home) / "shards")

    def path(self, job_id: UUID) -> Path:
        return self.folder / f"{job_id}.shard"


def export_spec(
    memory: str,
    *,
    profile: str,
    vectors: bool,
    requested_by: str,
    encrypt_for: list[str] | None = None,
) -> JobSpec:
    payload: dict[str, Any] = {"profile": profile, "vectors": vectors}
    if encrypt_for:
        payload["encrypt_for"] = list(encrypt_for)
    return JobSpec(type=SHARD_EXPORT, memory=memory, payload=payload, requested_by=requested_by)


def import_spec(
    memory: str, *, source_job: UUID, on_conflict: str, dry_run: bool, requested_by: str
) -> JobSpec:
    return JobSpec(
        type=SHARD_IMPORT,
        memory=memory,
        payload={"source_job": str(source_job), "on_conflict": on_conflict, "dry_run": dry_run},
        requested_by=requested_by,
    )


def _reason(exc: FortemiError) -> str:
    reason = exc.extensions.get("reason")
    return str(reason) if reason else type(exc).__name__.lower()


class _Sealing(io.RawIOBase):
    """A writable file that seals what it is given (MMPKE01) into ``sink``: the shard is
    encrypted as it is written, never kept in the clear on the server."""

    # ``sealer``: what EncryptionService.sealer returns (preamble, update, finalize).
    def __init__(self, sink: IO[bytes], sealer: Any) -> None:
        super().__init__()
        self._sink, self._sealer = sink, sealer
        sink.write(sealer.preamble)

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sink.write(self._sealer.update(bytes(data)))
        return len(data)

    def finish(self) -> None:
        self._sink.write(self._sealer.finalize())


@contextlib.contextmanager
def _written(final: Path) -> Iterator[IO[bytes]]:
    """A file beside ``final`` (mode 0600) that becomes ``final`` only once complete."""
    final.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
        os.replace(temporary, final)
    finally:
        Path(temporary).unlink(missing_ok=True)


def _exists(path: Path) -> bool:
    return path.is_file()


def _size(path: Path) -> int:
    return path.stat().st_size


class _Export:
    def __init__(
        self, shards: ShardService, files: ShardFiles, encryption: EncryptionService | None
    ) -> None:
        self._shards, self._files, self._encryption = shards, files, encryption

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        job = context.job
        profile, vectors = job.payload.get("profile"), job.payload.get("vectors", True)
        recipients = job.payload.get("encrypt_for", [])
        if (
            job.memory is None
            or not isinstance(profile, str)
            or not isinstance(vectors, bool)
            or not isinstance(recipients, list)
            or not all(isinstance(r, str) for r in recipients)
        ):
            return JobOutcome.failure("invalid_payload")
        final = self._files.path(job.id)
        try:
            sealer = None
            if recipients:
                if self._encryption is None:
                    return JobOutcome.failure("encryption_unavailable")
                # Recipients resolve before any row is read: a key withdrawn since the
                # request fails the job at once.
                sealer = await self._encryption.sealer(recipients, filename=final.name)
            with _written(final) as sink:
                sealing = None if sealer is None else _Sealing(sink, sealer)
                manifest = await self._shards.export(
                    job.memory,
                    sink if sealing is None else cast(IO[bytes], sealing),
                    profile=profile,
                    vectors=vectors,
                )
                if sealing is not None:
                    sealing.finish()
        except FortemiError as exc:
            return JobOutcome.failure(_reason(exc))
        result: dict[str, Any] = {
            "file": final.name,
            "bytes": _size(final),
            "profile": manifest.profile,
            "encrypted_for": recipients,
            "components": {c.name: c.count for c in manifest.components},
            "loss": [e.model_dump() for e in manifest.loss if e.rows],
        }
        return JobOutcome.success(result)


class _Import:
    def __init__(self, shards: ShardService, files: ShardFiles) -> None:
        self._shards, self._files = shards, files

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        job, payload = context.job, context.job.payload
        try:
            source = UUID(str(payload.get("source_job")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        on_conflict, dry_run = payload.get("on_conflict"), payload.get("dry_run")
        if job.memory is None or not isinstance(on_conflict, str) or not isinstance(dry_run, bool):
            return JobOutcome.failure("invalid_payload")
        path = self._files.path(source)
        if not _exists(path):
            return JobOutcome.failure("shard_missing")
        options = ImportOptions(on_conflict=on_conflict, dry_run=dry_run)
        try:
            report = await self._shards.import_(job.memory, path, options)
        except FortemiError as exc:
            return JobOutcome.failure(_reason(exc))
        return JobOutcome.success(report.as_json())


def shard_job_types(
    shards: ShardService, files: ShardFiles, encryption: EncryptionService | None = None
) -> list[JobType]:
    return [
        JobType(
            name=SHARD_EXPORT,
            tier=Tier.CPU,
            priority=3,
            handler=_Export(shards, files, encryption),
            max_attempts=2,
        ),
        JobType(
            name=SHARD_IMPORT,
            tier=Tier.CPU,
            priority=3,
            handler=_Import(shards, files),
            max_attempts=1,  # a refusal is final; a retry after a crash re-validates anyway
        ),
    ]
