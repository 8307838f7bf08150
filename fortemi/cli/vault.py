"""``fortemi vault sync``: a vault folder pushed to a server through its GraphQL API."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fortemi import console
from fortemi.cli.common import Commands, load_settings, seconds

__all__ = ["add_vault"]


def _vault(args: argparse.Namespace) -> int:
    import os

    from fortemi.wiki.vaults.client import (
        SyncOptions,
        VaultClient,
        print_summary,
        progress_bar,
        stamps,
        sync_folder,
        watch_folder,
    )

    url = os.environ.get("FORTEMI_URL") or load_settings().base_url
    options = SyncOptions.of(
        Path(args.dir),
        args.memory,
        args.name,
        flavour=args.flavour,
        dry_run=args.dry_run,
        batch_files=args.batch_files,
        batch_bytes=args.batch_bytes,
        max_file_bytes=args.max_file_bytes,
    )
    client = VaultClient(url, os.environ.get("FORTEMI_TOKEN"), args.memory)
    try:
        print(f"syncing {options.root} as vault {options.vault!r} to {url}", file=sys.stderr)
        since = stamps(options.root) if args.watch else {}
        summary = sync_folder(client, options, progress=progress_bar(sys.stderr))
        print_summary(summary)
        if not args.watch:
            return 1 if summary.errors else 0
        print(f"watching {options.root} (Ctrl-C stops)", file=sys.stderr, flush=True)
        try:
            watch_folder(client, options, since=since, interval=args.interval, report=print_summary)
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
        return 0
    finally:
        client.close()


def add_vault(commands: Commands) -> None:
    vault = commands.add_parser("vault", help="sync a vault folder of markdown to a server")
    vault_commands = vault.add_subparsers(dest="vault_command", required=True)
    sync = vault_commands.add_parser(
        "sync",
        help="send a vault's notes and _access.yaml files (FORTEMI_URL, FORTEMI_TOKEN)",
        description="Sync a folder of markdown notes (Obsidian, Foam, Dendron) into a memory "
        "through the server's GraphQL API at FORTEMI_URL (default: the local server), with "
        "the token in FORTEMI_TOKEN. Exit code 1 when a file had a problem.",
    )
    sync.add_argument("dir", help="the vault's root folder")
    sync.add_argument("--memory", help="the memory to sync into (default: the server's)")
    sync.add_argument("--name", help="the vault's name (default: the folder's name)")
    sync.add_argument(
        "--flavour",
        choices=["dendron", "obsidian"],
        help="the vault's dialect (default: dendron when dendron.yml is at its root)",
    )
    sync.add_argument("--dry-run", action="store_true", help="report what would change")
    sync.add_argument("--watch", action="store_true", help="keep syncing changes (Ctrl-C stops)")
    sync.add_argument(
        "--interval", type=seconds, default=2.0, help="seconds between polls with --watch"
    )
    sync.add_argument(
        "--batch-files", type=console.positive_int, default=200, help="files per request"
    )
    sync.add_argument(
        "--batch-bytes", type=console.positive_int, default=4 << 20, help="bytes per request"
    )
    sync.add_argument(
        "--max-file-bytes",
        type=console.positive_int,
        default=1 << 20,
        help="larger files are reported, not sent (the server's FORTEMI_MAX_NOTE_BYTES)",
    )
    vault.set_defaults(run=_vault)
