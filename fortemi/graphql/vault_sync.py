"""``syncVaultFiles``: a client pushes a vault's files, in batches, into the request's memory.

Thin: parse the input, hand the service the caller's authorizer (every decision audited),
map the report. Which access each file needs, and why, is the vault service's docstring
(:mod:`fortemi.wiki.vaults.service`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from enum import Enum

import strawberry

from fortemi.auth.decision import Action, Decision, Resource
from fortemi.graphql.context import Context, Info
from fortemi.graphql.notes.types import Note
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import note_event
from fortemi.wiki.vaults import FileKind, FileOutcome, PathRange, SyncReport, VaultFile
from fortemi.wiki.vaults.files import VaultProblem as ProblemModel

__all__ = ["VaultSyncMutation"]

VaultFileOutcome = strawberry.enum(FileOutcome, description="What a sync did with one file")
VaultFileKind = strawberry.enum(FileKind, description="What a vault file is to a sync")


@strawberry.enum(
    description="Whose link rules a vault's notes follow. Omitted: a batch holding "
    "dendron.yml is DENDRON, else the vault's stored notes decide, else OBSIDIAN"
)
class VaultFlavour(Enum):
    DENDRON = strawberry.enum_value(
        "dendron", description="[[label|target]], dot-hierarchy names, dendron://vault/"
    )
    OBSIDIAN = strawberry.enum_value(
        "obsidian", description="Obsidian's and Foam's rules: [[target|label]], paths"
    )


@strawberry.input(description="One file: its vault-relative path and its text (or bytes)")
class VaultFileInput:
    path: str = strawberry.field(description="POSIX path from the vault's root, e.g. a/b.md")
    content: str | None = strawberry.field(default=None, description="The file's text")
    content_base64: str | None = strawberry.field(
        default=None,
        description="The file's bytes, base64, for a file that is not UTF-8 text (it is "
        "reported, not stored). Neither field: the vault holds the file but the client "
        "could not send it; its note is kept as it is",
    )


@strawberry.input(description="Paths p with after < p <= through, bytewise (null: open)")
class VaultPathRange:
    after: str | None = None
    through: str | None = None


@strawberry.input(description="A batch of a vault's files")
class SyncVaultFilesInput:
    vault: str = strawberry.field(
        description="The vault's name: its notes get source `vault:<name>` "
        "(^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$)"
    )
    files: list[VaultFileInput]
    complete: bool = strawberry.field(
        default=False,
        description="These files are the whole vault: its other notes are soft-deleted",
    )
    covers: VaultPathRange | None = strawberry.field(
        default=None,
        description="These files are every vault file in this range of paths: the vault's "
        "notes in it that are not among them are soft-deleted (for batches; see the README)",
    )
    flavour: VaultFlavour | None = None
    dry_run: bool = strawberry.field(default=False, description="Report, write nothing")


@strawberry.type(description="A file that was not synced, or a warning about one that was")
class VaultProblem:
    path: str
    reason: str = strawberry.field(description="A stable code, e.g. not_utf8, bad_policy")
    message: str
    line: int | None
    field: str | None
    severity: str = strawberry.field(description="error (not synced) or warning")

    @classmethod
    def from_model(cls, problem: ProblemModel) -> VaultProblem:
        return cls(
            path=problem.path,
            reason=problem.reason,
            message=problem.message,
            line=problem.line,
            field=problem.field,
            severity=problem.severity,
        )


@strawberry.type
class VaultFileResult:
    path: str
    kind: FileKind
    outcome: FileOutcome
    reason: str | None
    message: str | None
    note: Note | None


@strawberry.type(description="A vault's wiki links, over the notes you may read")
class VaultSyncLinks:
    links: int = strawberry.field(description="Wiki links written in the vault's notes")
    resolved: int = strawberry.field(description="Links that name a note")
    dangling: int = strawberry.field(description="Links that name none (ambiguous included)")
    ambiguous: int = strawberry.field(description="Dangling links that matched several notes")


@strawberry.type(description="What one batch did")
class SyncVaultFilesPayload:
    _memory: strawberry.Private[str]
    vault: str
    dry_run: bool
    results: list[VaultFileResult]
    problems: list[VaultProblem]
    created: int
    updated: int
    restored: int
    unchanged: int
    deleted: int
    skipped: int = strawberry.field(description="Note files not synced (see problems)")
    policies_applied: int
    policies_unchanged: int
    policies_skipped: int = strawberry.field(
        description="Access files not applied, and policies/default.yaml (never applied)"
    )
    errors: int = strawberry.field(description="Problems of severity error")

    @strawberry.field(
        description="The whole vault's wiki links once this batch is written, counted as "
        "vaultStatus counts them (over the notes you may read). Links are resolved in the "
        "batch's own transaction, so these are final; null for a dry run"
    )
    async def links(self, info: Info) -> VaultSyncLinks | None:
        if self.dry_run:
            return None
        context = info.context
        _, visible = await context.scoped_memory()
        status = await context.services.links.vault_status(
            self._memory, self.vault, visibility=visible, first=0
        )
        return VaultSyncLinks(
            links=status.links,
            resolved=status.resolved,
            dangling=status.dangling,
            ambiguous=status.ambiguous,
        )

    @classmethod
    def from_report(cls, memory: str, report: SyncReport) -> SyncVaultFilesPayload:
        note, access = FileKind.NOTE, FileKind.ACCESS
        policy_kinds = (FileKind.ACCESS, FileKind.DEFAULT_POLICY)
        return cls(
            _memory=memory,
            vault=report.vault,
            dry_run=report.dry_run,
            results=[
                VaultFileResult(
                    path=r.path,
                    kind=r.kind,
                    outcome=r.outcome,
                    reason=r.reason,
                    message=r.message,
                    note=None if r.note is None else Note.from_model(r.note),
                )
                for r in report.results
            ],
            problems=[VaultProblem.from_model(p) for p in report.problems],
            created=report.count(FileOutcome.CREATED),
            updated=report.count(FileOutcome.UPDATED),
            restored=report.count(FileOutcome.RESTORED),
            unchanged=report.count(FileOutcome.UNCHANGED, note),
            deleted=report.count(FileOutcome.DELETED),
            skipped=sum(
                1
                for r in report.results
                if r.outcome is FileOutcome.SKIPPED and r.kind not in policy_kinds
            ),
            policies_applied=report.count(FileOutcome.APPLIED),
            policies_unchanged=report.count(FileOutcome.UNCHANGED, access),
            policies_skipped=sum(
                1
                for r in report.results
                if r.outcome is FileOutcome.SKIPPED and r.kind in policy_kinds
            ),
            errors=sum(1 for p in report.problems if p.severity == "error"),
        )


class _Gate:
    """The caller's decisions through the one authorizer, recorded in one audit write, as
    an import's: a memory's admin may sync into its projects and skills whatever their
    policies say about writing (reason ``memory_admin_import``; an explicit deny wins)."""

    def __init__(self, context: Context) -> None:
        self._context = context

    async def decide_all(self, asks: Sequence[tuple[Action, Resource]]) -> list[Decision]:
        if not asks:
            return []
        context = self._context
        return await context.services.authorizer.decide_all(
            context.caller, asks, context.trace, importing=True
        )


def _file(item: VaultFileInput, index: int) -> VaultFile:
    if item.content is not None and item.content_base64 is not None:
        raise BadUserInput(
            f"files[{index}] ({item.path!r}) has both content and contentBase64; send one",
            field="files",
            index=index,
        )
    if item.content is not None:
        try:
            return VaultFile(item.path, item.content.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate from JSON: not text
            return VaultFile(item.path, item.content.encode("utf-8", "surrogatepass"))
    if item.content_base64 is not None:
        try:
            return VaultFile(item.path, base64.b64decode(item.content_base64, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise BadUserInput(
                f"files[{index}] ({item.path!r}): contentBase64 is not base64",
                field="files",
                index=index,
            ) from exc
    return VaultFile(item.path, None)


def _range(input: SyncVaultFilesInput) -> PathRange | None:
    if input.complete and input.covers is not None:
        raise BadUserInput("complete and covers both say what to prune; send one", field="covers")
    if input.complete:
        return PathRange()
    if input.covers is None:
        return None
    return PathRange(input.covers.after, input.covers.through)


@strawberry.type
class VaultSyncMutation:
    @strawberry.mutation(
        description="Sync a batch of a vault's files into notes (source vault:<name>, "
        "external id and metadata.path = the path) and its _access.yaml files into policies"
    )
    async def sync_vault_files(
        self, info: Info, input: SyncVaultFilesInput
    ) -> SyncVaultFilesPayload:
        context = info.context
        settings = context.services.settings
        if len(input.files) > settings.max_upsert_batch:
            raise BadUserInput(
                f"a batch holds at most {settings.max_upsert_batch} files; "
                f"{len(input.files)} were sent (setting FORTEMI_MAX_UPSERT_BATCH): split it",
                field="files",
                limit=settings.max_upsert_batch,
            )
        files = [_file(item, index) for index, item in enumerate(input.files)]
        prune = _range(input)
        memory = await context.memory()
        report = await context.services.vaults.sync(
            memory,
            input.vault,
            files,
            gate=_Gate(context),
            actor=context.caller.sub,
            prune=prune,
            flavour=None if input.flavour is None else input.flavour.name.lower(),
            dry_run=input.dry_run,
        )
        if not input.dry_run:
            kinds = {
                FileOutcome.CREATED: "created",
                FileOutcome.UPDATED: "updated",
                FileOutcome.RESTORED: "restored",
                FileOutcome.DELETED: "deleted",
            }
            for result in report.results:
                kind = kinds.get(result.outcome)
                if kind is not None and result.note is not None:
                    await context.notify(note_event(kind, memory, result.note, context.caller.sub))
        return SyncVaultFilesPayload.from_report(memory, report)
