"""What a vault sync takes and reports: files, path ranges, per-file results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from fortemi.auth.decision import Action, Decision, Resource
from fortemi.platform.notes import Note
from fortemi.wiki.vaults.files import FileKind, VaultProblem

__all__ = [
    "AccessGate",
    "FileOutcome",
    "FileResult",
    "PathRange",
    "SyncReport",
    "VaultFile",
]


class FileOutcome(StrEnum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    RESTORED = "RESTORED"
    UNCHANGED = "UNCHANGED"
    DELETED = "DELETED"
    SKIPPED = "SKIPPED"
    APPLIED = "APPLIED"  # an access file stored as its project's or skill's policy


class AccessGate(Protocol):
    """The caller's authorization: decisions recorded in the audit log, in one write."""

    async def decide_all(self, asks: Sequence[tuple[Action, Resource]]) -> list[Decision]: ...


@dataclass(frozen=True, slots=True)
class VaultFile:
    """One file as the client read it; ``data`` None: the vault holds it, but the client
    could not send it (it reported why), so it is neither changed nor pruned."""

    path: str
    data: bytes | None


@dataclass(frozen=True, slots=True)
class PathRange:
    """Paths p with ``after < p <= through`` (bytewise; None: open)."""

    after: str | None = None
    through: str | None = None


@dataclass(frozen=True, slots=True)
class FileResult:
    path: str
    kind: FileKind
    outcome: FileOutcome
    reason: str | None = None
    message: str | None = None
    note: Note | None = None


@dataclass
class SyncReport:
    vault: str
    dry_run: bool
    results: list[FileResult] = field(default_factory=list)
    problems: list[VaultProblem] = field(default_factory=list)  # errors and warnings

    def count(self, outcome: FileOutcome, kind: FileKind | None = None) -> int:
        return sum(
            1 for r in self.results if r.outcome is outcome and (kind is None or r.kind is kind)
        )

    def skip(self, problem: VaultProblem, kind: FileKind) -> None:
        self.problems.append(problem)
        self.results.append(
            FileResult(problem.path, kind, FileOutcome.SKIPPED, problem.reason, problem.message)
        )
