"""Knowledge shards: a memory exported as a verifiable archive, and imported back.

Callers authorize first: both operations need memory ``admin`` (an export reads every
note, whatever the read policies of its projects, so it must never be a way around them)
and are audited by the caller's enforcement point (GraphQL context, CLI).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fortemi.documents.shards.apply import POLICIES, AfterImport, apply_shard
from fortemi.documents.shards.archive import Limits
from fortemi.documents.shards.export import ExportOptions, export_shard
from fortemi.documents.shards.manifest import Manifest
from fortemi.documents.shards.validation import validate
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Conflict

__all__ = ["ImportOptions", "ImportReport", "ShardService"]


@dataclass(frozen=True, slots=True)
class ImportOptions:
    on_conflict: str = "error"
    dry_run: bool = False
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import found and did: rows per table in the shard, those whose key the
    memory already held, and those written (none on a dry run)."""

    manifest: Manifest
    dry_run: bool
    on_conflict: str
    incoming: dict[str, int]
    conflicts: dict[str, int]
    written: dict[str, int]

    def as_json(self) -> dict[str, object]:
        return {
            "profile": self.manifest.profile,
            "source_memory": self.manifest.memory,
            "dry_run": self.dry_run,
            "on_conflict": self.on_conflict,
            "incoming": self.incoming,
            "conflicts": {k: v for k, v in self.conflicts.items() if v},
            "written": self.written,
            "loss": [entry.model_dump() for entry in self.manifest.loss],
        }


class ShardService:
    """``after_import``: what the composition root adds to an import's transaction for
    other features (each embedding set's vector index), which this feature cannot import."""

    def __init__(
        self,
        db: Database,
        *,
        producer: str = "fortemi",
        after_import: Sequence[AfterImport] = (),
    ) -> None:
        self._db = db
        self._producer = producer
        self._after = tuple(after_import)

    async def export(
        self, memory: str, sink: IO[bytes], *, profile: str = "full-v1", vectors: bool = True
    ) -> Manifest:
        options = ExportOptions(profile=profile, vectors=vectors, producer=self._producer)
        return await export_shard(self._db, memory, sink, options)

    async def import_(self, memory: str, path: Path, options: ImportOptions) -> ImportReport:
        """Validate the whole shard, then (unless ``dry_run``) write it in one transaction.

        Any refusal (``BadUserInput`` with a ``shard_*`` reason, or ``Conflict`` with
        ``shard_conflict`` under the default policy) happens before the first write.
        """
        if options.on_conflict not in POLICIES:
            raise BadUserInput(
                f"on_conflict is one of {', '.join(POLICIES)}", reason="shard_bad_policy"
            )
        plan = await validate(self._db, memory, path, options.limits)
        clashing = {t: n for t, n in plan.conflicts.items() if n}
        if clashing and options.on_conflict == "error":
            listed = ", ".join(f"{n} {t}" for t, n in sorted(clashing.items()))
            raise Conflict(
                f"The memory already holds rows of this shard ({listed}); import with "
                "on-conflict skip, replace or merge",
                reason="shard_conflict",
            )
        written: dict[str, int] = {}
        if not options.dry_run:
            written = await apply_shard(
                self._db, memory, path, options.limits, options.on_conflict, self._after
            )
        return ImportReport(
            manifest=plan.manifest,
            dry_run=options.dry_run,
            on_conflict=options.on_conflict,
            incoming=plan.incoming,
            conflicts=plan.conflicts,
            written=written,
        )
