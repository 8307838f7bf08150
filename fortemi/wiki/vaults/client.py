"""``fortemi vault sync``: a GraphQL client that pushes a vault folder to a server.

It reads the folder (:func:`~fortemi.wiki.vaults.files.scan`), sends its files in batches
(by count and bytes) to ``syncVaultFiles`` and prints what the server did. Batches go in
path order, each saying which range of paths it covers (from the previous batch's last
path to its own, the last one open-ended), so the server prunes the notes of files that
are gone without any batch naming the whole vault; access files go last, in a batch of
their own, so a vault's policies never stand in the way of its first sync's notes.

A file too large to send, or one that cannot be read, is reported here and sent without
content: the server keeps its note as it is rather than pruning it. Text that is not
UTF-8 is sent as base64 for the server to report, so every problem is said one way.

``--watch`` polls the files' modification times and sizes (no dependency on inotify or
FSEvents, which also miss changes on network mounts) and sends what changed; a file that
went away is pruned by a batch covering only the range it left.
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fortemi.platform.api_client import ApiClient
from fortemi.platform.errors import BadUserInput
from fortemi.wiki.vaults.files import (
    ACCESS_FILE,
    DENDRON,
    VaultProblem,
    classify,
    read_file,
    scan,
    validate_vault_name,
)

__all__ = ["Summary", "SyncOptions", "VaultClient", "sync_folder", "watch_folder"]

_MUTATION = """
mutation Sync($i: SyncVaultFilesInput!) {
  syncVaultFiles(input: $i) {
    dryRun created updated restored unchanged deleted skipped errors
    policiesApplied policiesUnchanged policiesSkipped
    links { resolved dangling ambiguous }
    results { path outcome }
    problems { path reason message line field severity }
  }
}
"""
_COUNTS = (
    "created",
    "updated",
    "restored",
    "unchanged",
    "deleted",
    "skipped",
    "policiesApplied",
    "policiesUnchanged",
    "policiesSkipped",
)


@dataclass(frozen=True, slots=True)
class SyncOptions:
    root: Path
    memory: str | None
    vault: str
    flavour: str | None = None
    dry_run: bool = False
    batch_files: int = 200
    batch_bytes: int = 4 * 1024 * 1024
    max_file_bytes: int = 1024 * 1024

    @classmethod
    def of(cls, root: Path, memory: str | None, name: str | None, **rest: Any) -> SyncOptions:
        root = root.resolve()
        if not root.is_dir():
            raise BadUserInput(f"{root} is not a folder")
        vault = validate_vault_name(name or root.name)
        flavour = rest.pop("flavour", None)
        if flavour is None and (root / "dendron.yml").is_file():
            flavour = DENDRON
        return cls(root, memory, vault, flavour, **rest)


@dataclass
class Summary:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    problems: list[dict[str, Any]] = field(default_factory=list)
    # The vault's link counts after the last batch (each batch reports the whole vault's,
    # resolved in its own transaction); None before any batch, or in a dry run.
    links: dict[str, int] | None = None
    dry_run: bool = False

    def add(self, payload: dict[str, Any]) -> None:
        for key in _COUNTS:
            self.counts[key] += int(payload.get(key) or 0)
        self.dry_run = self.dry_run or bool(payload.get("dryRun"))
        if payload.get("links") is not None:
            self.links = payload["links"]
        self.problems.extend(payload.get("problems") or [])

    def local(self, problem: VaultProblem) -> None:
        self.problems.append(
            {
                "path": problem.path,
                "reason": problem.reason,
                "message": problem.message,
                "line": problem.line,
                "field": problem.field,
                "severity": problem.severity,
            }
        )

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.get("severity") == "error")

    def lines(self) -> list[str]:
        c = self.counts
        out = [
            f"notes: {c['created']} created, {c['updated']} updated, {c['restored']} restored, "
            f"{c['unchanged']} unchanged, {c['deleted']} deleted, {c['skipped']} skipped",
            f"policies: {c['policiesApplied']} applied, {c['policiesUnchanged']} unchanged, "
            f"{c['policiesSkipped']} skipped",
        ]
        if self.links is not None:
            links = self.links
            out.append(
                f"links: {links['resolved']} resolved, {links['dangling']} dangling "
                f"({links['ambiguous']} ambiguous) among the notes you may read"
            )
        elif self.dry_run:
            out.append("links: not resolved in a dry run")
        for p in self.problems:
            where = p["path"] + (f":{p['line']}" if p.get("line") else "")
            what = f"{p['field']}: " if p.get("field") else ""
            out.append(f"{p['severity']}: {where}: {p['reason']}: {what}{p['message']}")
        out.append(f"problems: {self.errors} error(s)")
        return out


class VaultClient(ApiClient):
    """``syncVaultFiles`` over HTTP; errors become :class:`FortemiError` with the server's
    message, so the command prints one line, never a traceback."""

    def sync(self, input: dict[str, Any]) -> dict[str, Any]:
        synced: dict[str, Any] = self.request(_MUTATION, {"i": input}, "syncVaultFiles")
        return synced


@dataclass(frozen=True, slots=True)
class _Entry:
    path: str
    payload: dict[str, str]  # {"path", and "content" or "contentBase64" or nothing}
    size: int


def _entry(path: str, data: bytes | VaultProblem, options: SyncOptions, summary: Summary) -> _Entry:
    if isinstance(data, VaultProblem):
        summary.local(data)
        return _Entry(path, {"path": path}, len(path))
    if len(data) > options.max_file_bytes:
        summary.local(
            VaultProblem(
                path,
                "too_large",
                f"over {options.max_file_bytes} bytes (--max-file-bytes); not sent, its note "
                "is kept as it was",
            )
        )
        return _Entry(path, {"path": path}, len(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        encoded = base64.b64encode(data).decode("ascii")
        return _Entry(path, {"path": path, "contentBase64": encoded}, len(encoded) + len(path))
    return _Entry(path, {"path": path, "content": text}, len(data) + len(path))


def _batches(entries: Sequence[_Entry], options: SyncOptions) -> Iterable[list[_Entry]]:
    batch: list[_Entry] = []
    size = 0
    for entry in entries:
        if batch and (len(batch) >= options.batch_files or size + entry.size > options.batch_bytes):
            yield batch
            batch, size = [], 0
        batch.append(entry)
        size += entry.size
    yield batch  # possibly empty: a vault with no notes still prunes its old ones


Progress = Callable[[int, int], None]


def progress_bar(stream: TextIO) -> Progress:
    """A bar redrawn in place on a terminal; one line per batch otherwise (logs, CI)."""
    tty = stream.isatty()

    def show(done: int, total: int) -> None:
        if tty:
            width = 30
            filled = width if total == 0 else width * done // total
            stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
            if done >= total:
                stream.write("\n")
        else:
            stream.write(f"synced {done}/{total} files\n")
        stream.flush()

    return show


def _input(options: SyncOptions, batch: list[_Entry], **extra: Any) -> dict[str, Any]:
    input: dict[str, Any] = {
        "vault": options.vault,
        "files": [entry.payload for entry in batch],
        "dryRun": options.dry_run,
        **extra,
    }
    if options.flavour is not None:
        input["flavour"] = options.flavour.upper()
    return input


def send(
    client: VaultClient,
    options: SyncOptions,
    files: Sequence[tuple[str, bytes | VaultProblem]],
    *,
    progress: Progress,
    prune: bool = True,
) -> Summary:
    """Send ``files`` (path order); with ``prune``, they are the whole vault."""
    summary = Summary()
    entries = [_entry(path, data, options, summary) for path, data in files]
    notes = [e for e in entries if not e.path.endswith("/" + ACCESS_FILE)]
    access = [e for e in entries if e.path.endswith("/" + ACCESS_FILE)]
    total, done = len(entries), 0
    batches = list(_batches(notes, options)) if (notes or prune) else []
    after: str | None = None
    for index, batch in enumerate(batches):
        last = index == len(batches) - 1
        covers = {"after": after, "through": None if last else batch[-1].path}
        extra = {"covers": covers} if prune else {}
        summary.add(client.sync(_input(options, batch, **extra)))
        after = batch[-1].path if batch else after
        done += len(batch)
        progress(done, total)
    for batch in _batches(access, options) if access else ():
        summary.add(client.sync(_input(options, batch)))
        done += len(batch)
        progress(done, total)
    return summary


def sync_folder(client: VaultClient, options: SyncOptions, *, progress: Progress) -> Summary:
    return send(
        client,
        options,
        list(scan(options.root, max_bytes=options.max_file_bytes)),
        progress=progress,
    )


def _stamps(root: Path) -> dict[str, tuple[int, int]]:
    stamps: dict[str, tuple[int, int]] = {}
    for path in _paths(root):
        try:
            stat = (root / path).stat()
        except OSError:
            continue
        stamps[path] = (stat.st_mtime_ns, stat.st_size)
    return stamps


def _paths(root: Path) -> list[str]:
    # scan() decides what a vault file is; here only its paths are needed, not its bytes.
    return [path for path, _ in scan(root, max_bytes=0)]


def stamps(root: Path) -> dict[str, tuple[int, int]]:
    """Each vault file's (modification time, size): what :func:`watch_folder` compares."""
    return _stamps(root)


def watch_folder(
    client: VaultClient,
    options: SyncOptions,
    *,
    since: dict[str, tuple[int, int]],
    interval: float,
    report: Callable[[Summary], None],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll the folder and send what changed since the stamps ``since`` (taken before the
    first sync, so nothing changed during it is missed) until interrupted."""
    before = since
    while True:
        sleep(interval)
        now = _stamps(options.root)
        changed = sorted(p for p, stamp in now.items() if before.get(p) != stamp)
        gone = sorted(set(before) - set(now))
        before = now
        if not changed and not gone:
            continue
        files: list[tuple[str, bytes | VaultProblem]] = []
        for path in changed:
            try:
                files.append((path, read_file(options.root / path, options.max_file_bytes)))
            except OSError as exc:
                files.append((path, VaultProblem(path, "unreadable", f"cannot read: {exc}")))
        summary = send(client, options, files, progress=lambda done, total: None, prune=False)
        present = sorted(now)
        for path in gone:
            if classify(path).value == "note":
                # (previous file still there, path]: only ``path`` of the vault's files.
                previous = max((p for p in present if p < path), default=None)
                summary.add(
                    client.sync(_input(options, [], covers={"after": previous, "through": path}))
                )
        report(summary)


def print_summary(summary: Summary, stream: TextIO = sys.stdout) -> None:
    stream.write("\n".join(summary.lines()) + "\n")
    stream.flush()
