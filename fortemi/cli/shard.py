"""``fortemi shard export | import``: a memory as a knowledge shard, and back.

These commands work on the database directly, with the operator's own credentials (like
``migrate`` and ``audit``): whoever runs them can read every memory anyway, so no policy
is asked; each run is recorded in the audit log (reason ``operator_database_access``)
with the operating-system user. Over the API, ``exportShard`` / ``importShard`` need memory
``admin``. Encryption and decryption happen here, on the operator's machine: an encrypted
shard is opened with the recipient's private key file before it is read.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fortemi.cli.common import Commands, load_settings, setup_logging

if TYPE_CHECKING:
    from fortemi.platform.database import Database
    from fortemi.platform.settings import Settings

__all__ = ["add_shard"]

_MAGIC = b"MMPKE01\n"


def add_shard(commands: Commands) -> None:
    shard = commands.add_parser(
        "shard",
        help="export a memory as a knowledge shard, or import one (README: Knowledge shards)",
    )
    sub = shard.add_subparsers(dest="shard_command", required=True, metavar="<shard command>")
    export = sub.add_parser("export", help="write a memory to a shard file")
    export.add_argument("--memory", required=True, help="the memory to export")
    export.add_argument("--profile", choices=["core-v1", "full-v1"], default="full-v1")
    export.add_argument(
        "--no-vectors", action="store_true", help="full-v1 without chunks and vectors"
    )
    export.add_argument(
        "--with-attachment-bytes",
        action="store_true",
        help="core-v1 carries the attachments' bytes too (full-v1 always does)",
    )
    export.add_argument("-o", "--output", type=Path, required=True, help="the shard to write")
    export.add_argument(
        "--encrypt-for",
        action="append",
        default=[],
        metavar="ADDR",
        help="encrypt for this mm: address or public key file (repeatable; MMPKE01)",
    )
    export.add_argument("--keyring", type=Path, help="folder of *.pub files for --encrypt-for")
    export.set_defaults(run=_export)
    imp = sub.add_parser("import", help="validate a shard, then write it into a memory")
    imp.add_argument("--memory", required=True, help="the memory to import into")
    imp.add_argument("file", type=Path, help="the shard (or an MMPKE01-encrypted shard)")
    imp.add_argument("--dry-run", action="store_true", help="validate and report; write nothing")
    imp.add_argument(
        "--on-conflict",
        choices=["error", "skip", "replace", "merge"],
        default="error",
        help="rows whose key the memory holds: refuse (default), keep, take, take if newer",
    )
    imp.add_argument("--key", type=Path, help="your private key file, for an encrypted shard")
    imp.add_argument("--passphrase-file", type=Path, help="the private key's passphrase")
    imp.set_defaults(run=_import, pke_command="shard import")


def _export(args: argparse.Namespace) -> int:
    from fortemi.crypto import commands as pke

    recipients = []
    if args.encrypt_for:
        keyring = pke.keyring_folder(args)
        found = (pke.find_recipient(text, keyring) for text in args.encrypt_for)
        recipients = list({key.address: key for key in found}.values())
    with pke.replaced_on_success(args.output) as sink:
        if not recipients:
            manifest = _run(args, _export_async, sink)
        else:
            from fortemi.crypto.envelope import seal_stream

            with tempfile.TemporaryFile() as plain:
                manifest = _run(args, _export_async, plain)
                plain.seek(0)
                seal_stream(plain, sink, recipients, filename=args.output.name)
    print(json.dumps(manifest, indent=2))
    for key in recipients:
        print(f"encrypted for {key.address}")
    return 0


def _import(args: argparse.Namespace) -> int:
    with args.file.open("rb") as probe:
        encrypted = probe.read(len(_MAGIC)) == _MAGIC
    if not encrypted:
        report = _run(args, _import_async, args.file)
    else:
        if args.key is None:
            raise SystemExit("fortemi shard import: the shard is encrypted; pass --key")
        from fortemi.crypto import commands as pke
        from fortemi.crypto.envelope import open_stream
        from fortemi.crypto.errors import PkeError
        from fortemi.crypto.keys import read_private_key_file

        with tempfile.TemporaryDirectory() as folder:
            plain = Path(folder) / "shard.tar.gz"
            try:
                keypair = read_private_key_file(args.key, pke.passphrase(args))
                with args.file.open("rb") as source, plain.open("wb") as sink:
                    open_stream(source, sink, keypair)
            except PkeError as exc:
                raise SystemExit(f"fortemi shard import: {exc.message} [{exc.reason}]") from None
            report = _run(args, _import_async, plain)
    print(json.dumps(report, indent=2, default=str))
    return 0


def _run(args: argparse.Namespace, work: Any, target: Any) -> Any:
    from fortemi.platform.embedded import EmbeddedServices

    settings = load_settings()
    setup_logging(settings)
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        return asyncio.run(_connected(settings, urls.database, args, work, target))
    finally:
        services.stop()


async def _connected(
    settings: Settings, database_url: str, args: argparse.Namespace, work: Any, target: Any
) -> Any:
    from fortemi.auth.audit import AuditKeyring, AuditWriter
    from fortemi.platform.database import Database
    from fortemi.platform.memories import MemoryService
    from fortemi.platform.migrations import Migrations

    db = await Database.connect(database_url, min_size=1, max_size=2)
    try:
        await MemoryService(db, Migrations(settings.migrations_dir)).resolve(args.memory)
        async with AuditWriter(db, keyring=AuditKeyring.from_settings(settings)) as audit:
            await audit.append([_audit_record(args)])
            return await work(db, args, target)
    finally:
        await db.close()


def _audit_record(args: argparse.Namespace) -> Any:
    from fortemi.auth.audit.models import AuditRecord
    from fortemi.auth.decision import Reason

    details: dict[str, Any] = {"operation": f"shard_{args.shard_command}", "via": "cli"}
    if args.shard_command == "export":
        details |= {
            "profile": args.profile,
            "encrypted": bool(args.encrypt_for),
            "attachment_bytes": args.profile == "full-v1" or args.with_attachment_bytes,
        }
    else:
        details |= {"dry_run": args.dry_run, "on_conflict": args.on_conflict}
    return AuditRecord(
        at=datetime.now(UTC),
        user_id=f"os:{getpass.getuser()}",
        groups=(),
        resource_type="memory",
        resource_name=args.memory,
        memory=args.memory,
        action="admin",
        decision="allow",
        reason=Reason.OPERATOR_DATABASE_ACCESS,
        policy_version="operator",
        details=details,
    )


async def _export_async(db: Database, args: argparse.Namespace, sink: Any) -> dict[str, Any]:
    from fortemi import console
    from fortemi.documents.shards import ShardService

    service = ShardService(
        db, _blob_bytes(load_settings()), producer=f"fortemi {console.program_version()}"
    )
    manifest = await service.export(
        args.memory,
        sink,
        profile=args.profile,
        vectors=not args.no_vectors,
        attachment_bytes=args.with_attachment_bytes,
    )
    return {
        "memory": manifest.memory,
        "profile": manifest.profile,
        "components": {c.name: c.count for c in manifest.components},
        "loss": [e.model_dump() for e in manifest.loss if e.rows],
        "blobs": None if manifest.blobs is None else manifest.blobs.model_dump(),
    }


async def _import_async(db: Database, args: argparse.Namespace, path: Path) -> dict[str, object]:
    from fortemi.documents.shards import ImportOptions, ShardService
    from fortemi.retrieval.sets import EmbeddingSets

    options = ImportOptions(on_conflict=args.on_conflict, dry_run=args.dry_run)
    shards = ShardService(
        db, _blob_bytes(load_settings()), after_import=[EmbeddingSets().index_all]
    )
    report = await shards.import_(args.memory, path, options)
    return report.as_json()


def _blob_bytes(settings: Settings) -> Any:
    """The blob store the server uses (FORTEMI_BLOB_STORE), where attachment bytes are
    read from and written to."""
    from fortemi.documents.attachments.storage import build_blob_store, staging_dir
    from fortemi.documents.shards import BlobBytes

    return BlobBytes(build_blob_store(settings), staging_dir(settings))
