"""Syncing a vault's files into a memory: notes through the notes service, access files
into stored policies.

One call takes one batch of files. Its notes are written as one transaction (the notes
service's :meth:`~fortemi.platform.notes.NoteService.sync_external`, source
``vault:<name>``, external id = path); a file that cannot be read or parsed is reported
with its path and reason and the rest of the batch still syncs. Pruning: the caller says
which range of paths the batch covers (``PathRange``, bytewise order; the whole vault when
both ends are open), and the vault's notes in that range that the batch does not name are
soft-deleted, never any note of another source.

Access, decided through the caller's :class:`AccessGate` (every decision audited, each
distinct one once per batch): a note that changes needs ``write`` on its owner (and on its
old owner when it moves), an unchanged one ``read``, a pruned one ``delete``; an existing
note the caller may not read is skipped without a word about it beyond its own path. A
denied file is SKIPPED with the decision's reason. Access files are stored as policies
after the batch's notes, when the caller may administer policies (the ``admin`` action on
the system resource, as ``setPolicy``), else reported and skipped.

Flavour (whose link rules the notes' references follow, recorded as ``metadata.flavour``):
an explicit ``flavour`` wins; else a batch holding ``dendron.yml`` (Dendron's configuration,
at the vault's root) is Dendron's; else the batch inherits the flavour of the vault's
notes already stored (so a client that sends ``dendron.yml`` in its first batch need not
repeat it); else Obsidian's rules. An explicit flavour that contradicts what the batch or
the stored notes say still wins (the client knows what it sends, and a vault may really
change dialect), with a ``flavour_changed`` warning: the vault's notes outside the batch
keep their rules until they are synced again.
"""

from __future__ import annotations

from collections.abc import Sequence

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import PolicyService
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import (
    ExternalItem,
    NoteFilter,
    NoteService,
    SyncAdmission,
    SyncOutcome,
    SyncPlan,
)
from fortemi.platform.notes.validation import validate_item
from fortemi.wiki.vaults.files import (
    DENDRON,
    DENDRON_CONFIG,
    OBSIDIAN,
    AccessFile,
    FileKind,
    VaultNote,
    VaultProblem,
    classify,
    parse_access,
    parse_note,
    validate_path,
    validate_vault_name,
)
from fortemi.wiki.vaults.models import (
    AccessGate,
    FileOutcome,
    FileResult,
    PathRange,
    SyncReport,
    VaultFile,
)
from fortemi.wiki.vaults.policies import apply_policies, closed_action_hint

__all__ = [
    "AccessGate",
    "FileOutcome",
    "FileResult",
    "PathRange",
    "SyncReport",
    "VaultFile",
    "VaultService",
    "vault_source",
]

SOURCE_PREFIX = "vault:"
FLAVOURS = (DENDRON, OBSIDIAN)


def vault_source(vault: str) -> str:
    return SOURCE_PREFIX + vault


_NOTE_OUTCOMES = {
    SyncOutcome.CREATED: FileOutcome.CREATED,
    SyncOutcome.UPDATED: FileOutcome.UPDATED,
    SyncOutcome.RESTORED: FileOutcome.RESTORED,
    SyncOutcome.UNCHANGED: FileOutcome.UNCHANGED,
    SyncOutcome.DELETED: FileOutcome.DELETED,
    SyncOutcome.SKIPPED: FileOutcome.SKIPPED,
}


def _item(note: VaultNote) -> ExternalItem:
    return ExternalItem(
        external_id=note.path,
        title=note.title,
        content=note.content,
        format="markdown",
        metadata=note.metadata,
        tags=list(note.tags),
        project=note.project,
        skill=note.skill,
    )


class _Admission:
    """Decides a sync plan: each distinct (action, owner) once, all in one audit write."""

    def __init__(self, memory: str, gate: AccessGate) -> None:
        self._memory = memory
        self._gate = gate
        self.hidden: set[str] = set()  # pruned notes the caller may not read: not reported

    def _owner(self, owner: tuple[str | None, str | None]) -> Resource:
        return Resource.of_note(self._memory, *owner)

    async def __call__(self, plan: SyncPlan) -> SyncAdmission:
        needs: dict[str, list[tuple[Action, Resource]]] = {}
        for key, outcome, current, after in plan.items:
            asks: list[tuple[Action, Resource]] = []
            if current is not None:
                # Not-found before forbidden: a note the caller may not read is not theirs
                # to overwrite or to hear about.
                asks.append((Action.READ, self._owner((current.project, current.skill))))
            if outcome is not SyncOutcome.UNCHANGED:
                asks.append((Action.WRITE, self._owner(after)))
                if current is not None and (current.project, current.skill) != after:
                    asks.append((Action.WRITE, self._owner((current.project, current.skill))))
            needs[key] = asks
        for note in plan.prune:
            owner = self._owner((note.project, note.skill))
            needs[note.external_id or ""] = [(Action.READ, owner), (Action.DELETE, owner)]
        distinct = sorted(
            {ask for asks in needs.values() for ask in asks},
            key=lambda a: (a[0].value, a[1].type.value, a[1].name or ""),
        )
        decided = dict(zip(distinct, await self._gate.decide_all(distinct), strict=True))
        admitted: set[str] = set()
        reasons: dict[str, str] = {}
        pruned = {note.external_id for note in plan.prune}
        for key, asks in needs.items():
            denied = next((decided[a] for a in asks if not decided[a].allowed), None)
            if denied is None:
                admitted.add(key)
            elif key in pruned and denied.action is Action.READ:
                self.hidden.add(key)
            elif denied.action is Action.READ:
                reasons[key] = "the vault's note at this path is one you may not read"
            else:
                target = denied.resource
                what = "this memory" if target.type is ResourceType.MEMORY else target.name
                reasons[key] = f"you may not {denied.action.value} {what} ({denied.reason})"
                if denied.reason is Reason.ACTION_NOT_IN_POLICY:
                    reasons[key] += ": " + closed_action_hint(denied)
        return SyncAdmission(frozenset(admitted), reasons)


class VaultService:
    """Syncs vault files into a memory (see the module's docstring for the rules)."""

    def __init__(self, notes: NoteService, policies: PolicyService, *, max_file_bytes: int):
        self._notes = notes
        self._policies = policies
        self._max_bytes = max_file_bytes

    async def sync(
        self,
        memory: str,
        vault: str,
        files: Sequence[VaultFile],
        *,
        gate: AccessGate,
        actor: str,
        prune: PathRange | None = None,
        flavour: str | None = None,
        dry_run: bool = False,
    ) -> SyncReport:
        vault = validate_vault_name(vault)
        if flavour is not None and flavour not in FLAVOURS:
            raise BadUserInput(
                f"flavour {flavour!r} is not one this server reads: {', '.join(FLAVOURS)}",
                field="flavour",
            )
        report = SyncReport(vault, dry_run)
        flavour = await self._flavour(report, memory, vault, files, flavour)
        notes: list[VaultNote] = []
        access: list[AccessFile] = []
        seen: set[str] = set()
        for file in files:
            path = validate_path(file.path)
            if isinstance(path, VaultProblem):
                report.skip(path, FileKind.OTHER)
                continue
            if path in seen:
                problem = VaultProblem(path, "duplicate_path", "sent twice in one batch")
                report.skip(problem, classify(path))
                continue
            seen.add(path)
            kind = classify(path)
            if file.data is None or path == DENDRON_CONFIG:
                # Held by the vault, reported by the client: kept as it is. Dendron's
                # configuration decided the flavour above and is no note.
                continue
            if kind is FileKind.NOTE:
                self._read_note(report, notes, path, vault, file.data, flavour)
            elif kind is FileKind.ACCESS:
                parsed = parse_access(path, file.data, memory=memory, max_bytes=self._max_bytes)
                if isinstance(parsed, VaultProblem):
                    report.skip(parsed, kind)
                else:
                    report.problems.extend(parsed.warnings)
                    access.append(parsed)
            elif kind is FileKind.DEFAULT_POLICY:
                report.skip(
                    VaultProblem(
                        path,
                        "default_policy_not_applied",
                        "not applied: the server's default policy is its operator's "
                        "(FORTEMI_POLICY_DIR/default.yaml), not a vault's",
                        severity="warning",
                    ),
                    kind,
                )
            else:
                report.skip(
                    VaultProblem(
                        path,
                        "not_a_note",
                        "not synced: only markdown notes (.md) and _access.yaml files are read",
                        severity="warning",
                    ),
                    kind,
                )
        await self._sync_notes(report, memory, vault, notes, seen, gate, actor, prune, dry_run)
        if access:
            await apply_policies(self._policies, report, memory, access, gate, actor, dry_run)
        return report

    async def _flavour(
        self,
        report: SyncReport,
        memory: str,
        vault: str,
        files: Sequence[VaultFile],
        explicit: str | None,
    ) -> str | None:
        """The batch's flavour for :func:`parse_note` (None: Obsidian's rules), by the
        rules of the module's docstring."""
        config = any(f.path == DENDRON_CONFIG and f.data is not None for f in files)
        stored = await self._notes.list(
            memory, first=1, after=None, filter=NoteFilter(source=vault_source(vault))
        )
        recorded = None
        if stored.items:
            recorded = stored.items[0][1].metadata.get("flavour") or OBSIDIAN
        found = DENDRON if config else recorded
        chosen = explicit or found or OBSIDIAN
        if explicit is not None and found is not None and found != explicit:
            why = (
                f"the batch holds {DENDRON_CONFIG}"
                if config
                else f"the vault's notes were synced as {found.capitalize()}"
            )
            report.problems.append(
                VaultProblem(
                    DENDRON_CONFIG,  # the file whose presence or absence says Dendron
                    "flavour_changed",
                    f"read with {explicit.capitalize()}'s link rules as the flavour given "
                    f"says, although {why}; the vault's notes not in this batch keep their "
                    "rules until they are synced again",
                    severity="warning",
                )
            )
        return None if chosen == OBSIDIAN else chosen

    def _read_note(
        self,
        report: SyncReport,
        notes: list[VaultNote],
        path: str,
        vault: str,
        data: bytes,
        flavour: str | None,
    ) -> None:
        parsed = parse_note(path, data, vault=vault, max_bytes=self._max_bytes, flavour=flavour)
        if isinstance(parsed, VaultProblem):
            report.skip(parsed, FileKind.NOTE)
            return
        try:
            # The notes service refuses a whole batch for one bad item; checked here
            # first, a note past a limit (a title, a tag) is one file's problem.
            validate_item(_item(parsed), max_note_bytes=self._max_bytes)
        except BadUserInput as exc:
            report.skip(
                VaultProblem(path, "invalid_note", exc.message, field=exc.extensions.get("field")),
                FileKind.NOTE,
            )
            return
        notes.append(parsed)

    async def _sync_notes(
        self,
        report: SyncReport,
        memory: str,
        vault: str,
        notes: list[VaultNote],
        sent: set[str],
        gate: AccessGate,
        actor: str,
        prune: PathRange | None,
        dry_run: bool,
    ) -> None:
        if not notes and prune is None:
            return
        admission = _Admission(memory, gate)
        results = await self._notes.sync_external(
            memory,
            vault_source(vault),
            [_item(note) for note in notes],
            prune=None if prune is None else (prune.after, prune.through),
            # Paths sent that make no note (a problem, an access file, one the client
            # could not read) are still in the vault: their notes are not pruned.
            keep=sent,
            admit=admission,
            actor=actor,
            dry_run=dry_run,
        )
        for result in results:
            if result.external_id in admission.hidden:
                continue
            report.results.append(
                FileResult(
                    result.external_id,
                    FileKind.NOTE,
                    _NOTE_OUTCOMES[result.outcome],
                    reason="forbidden" if result.reason else None,
                    message=result.reason,
                    note=result.note,
                )
            )
            if result.outcome is SyncOutcome.SKIPPED:
                report.problems.append(
                    VaultProblem(result.external_id, "forbidden", result.reason or "")
                )
