"""``fortemi attach`` and ``fortemi import``: files sent to a server's GraphQL API.

Each file goes in its own multipart request (the GraphQL multipart request spec), read
from disk in chunks by httpx as it is sent, so a large file is never held in memory. A
file the server refuses (too large, a note that does not exist) is reported and the
others still go; the command's exit status says whether any failed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fortemi.platform.api_client import ApiClient
from fortemi.platform.errors import FortemiError, Unavailable

__all__ = ["AttachmentClient", "Outcome", "files_under", "progress_bar", "send_all"]

_FIELDS = "id filename size extractionStatus"
ATTACH = f"""mutation($n: ID!, $file: Upload!) {{
  attachFile(noteId: $n, file: $file) {{ {_FIELDS} }} }}"""
CREATE = f"""mutation($file: Upload!, $i: CreateNoteInput) {{
  createNoteFromFile(file: $file, input: $i) {{
    note {{ id title }} attachment {{ {_FIELDS} }} }} }}"""

# (files done, files in all, bytes done, bytes in all)
Progress = Callable[[int, int, int, int], None]


@dataclass
class Outcome:
    sent: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


class AttachmentClient(ApiClient):
    """Multipart uploads to ``url``/graphql with the token and memory headers."""

    def __init__(self, url: str, token: str | None, memory: str | None, *, timeout: float = 600):
        super().__init__(url, token, memory, timeout=timeout)


def files_under(paths: Iterable[Path]) -> Iterator[Path]:
    """Each file named, and the files under each folder named (sorted, hidden ones and
    symbolic links left out: an import never leaves the folders it was given)."""
    for path in paths:
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    found = Path(root) / name
                    if not name.startswith(".") and found.is_file() and not found.is_symlink():
                        yield found
        else:
            yield path


def send_all(
    client: AttachmentClient, paths: list[Path], note_id: str | None, progress: Progress
) -> Outcome:
    """Attach every file to ``note_id``, or (None) make a note of each."""
    outcome = Outcome()
    total = sum(p.stat().st_size for p in paths if p.is_file())
    done_bytes = 0
    for index, path in enumerate(paths, start=1):
        try:
            if not path.is_file():
                raise FortemiError(f"{path}: not a readable file")
            if note_id is not None:
                outcome.sent.append(
                    (path, client.upload(ATTACH, {"n": note_id}, path, "attachFile"))
                )
            else:
                made = client.upload(CREATE, {}, path, "createNoteFromFile")
                outcome.sent.append((path, made))
            done_bytes += path.stat().st_size
        except Unavailable:
            raise
        except FortemiError as exc:
            outcome.failed.append((path, exc.message))
        progress(index, len(paths), done_bytes, total)
    return outcome


def progress_bar(stream: TextIO) -> Progress:
    """A bar redrawn in place on a terminal; one line per file otherwise (logs, CI)."""
    tty = stream.isatty()

    def show(done: int, total: int, sent: int, size: int) -> None:
        if tty:
            width = 30
            filled = width if size == 0 else width * sent // size
            stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files, "
                f"{sent / 1_048_576:.1f}/{size / 1_048_576:.1f} MiB"
            )
            if done >= total:
                stream.write("\n")
        else:
            stream.write(f"sent {done}/{total} files\n")
        stream.flush()

    return show
