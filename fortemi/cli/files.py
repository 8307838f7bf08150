"""``fortemi attach NOTE FILE...`` and ``fortemi import FILE|DIR...``: files sent to a
server through its GraphQL API (FORTEMI_URL, FORTEMI_TOKEN)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fortemi.cli.common import Commands, load_settings

__all__ = ["add_files"]


def _send(args: argparse.Namespace, note_id: str | None) -> int:
    from fortemi.documents.attachments.client import (
        AttachmentClient,
        files_under,
        progress_bar,
        send_all,
    )

    url = os.environ.get("FORTEMI_URL") or load_settings().base_url
    paths = list(files_under(Path(p) for p in args.paths))
    if not paths:
        print("nothing to send", file=sys.stderr)
        return 0
    client = AttachmentClient(url, os.environ.get("FORTEMI_TOKEN"), args.memory)
    try:
        outcome = send_all(client, paths, note_id, progress_bar(sys.stderr))
    finally:
        client.close()
    for path, sent in outcome.sent:
        attachment = sent.get("attachment", sent)
        note = sent.get("note")
        where = f" as note {note['id']}" if note else ""
        print(f"{path}\t{attachment['id']}\t{attachment['extractionStatus']}{where}")
    for path, message in outcome.failed:
        print(f"{path}: {message}", file=sys.stderr)
    return 1 if outcome.failed else 0


def _attach(args: argparse.Namespace) -> int:
    return _send(args, args.note)


def _import(args: argparse.Namespace) -> int:
    return _send(args, None)


def add_files(commands: Commands) -> None:
    attach = commands.add_parser(
        "attach",
        help="attach files to a note (FORTEMI_URL, FORTEMI_TOKEN)",
        description="Upload files as attachments of NOTE (its id). Each line of output is "
        "a file, its attachment id and extraction status. Exit status 1 when a file was "
        "refused (too large, no such note); the others are still sent.",
    )
    attach.add_argument("note", help="the note's id (global id or UUID)")
    attach.add_argument("paths", nargs="+", metavar="FILE", help="files to attach")
    attach.add_argument("--memory", help="the memory (default: the server's)")
    attach.set_defaults(run=_attach)
    imported = commands.add_parser(
        "import",
        help="make a note of each file (folders: every file under them)",
        description="Upload each file as a new note holding it (createNoteFromFile), "
        "titled after the file. Folders are walked (hidden files and symbolic links "
        "left out). Exit status 1 when a file was refused.",
    )
    imported.add_argument("paths", nargs="+", metavar="FILE|DIR", help="files or folders")
    imported.add_argument("--memory", help="the memory (default: the server's)")
    imported.set_defaults(run=_import)
