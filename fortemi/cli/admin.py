"""The operator's commands: ``fortemi token``, ``migrate``, ``audit`` and ``schema``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fortemi import console
from fortemi.cli.common import Commands, load_settings, setup_logging, ttl

if TYPE_CHECKING:
    from fortemi.auth.audit import AuditKeyring, Pin
    from fortemi.platform.settings import Settings

__all__ = ["add_audit", "add_migrate", "add_schema", "add_token"]


def _token(args: argparse.Namespace) -> int:
    from fortemi.auth.local_issuer import LocalIssuer

    settings = load_settings()
    if not settings.uses_local_issuer:
        raise SystemExit(
            "fortemi token: OIDC_ISSUER is set, so the local issuer is off; "
            "get tokens from your identity provider"
        )
    issuer = LocalIssuer.load_or_create(settings.home, settings.issuer, settings.oidc_audience)
    token = issuer.mint(
        args.sub,
        groups=args.group,
        roles=args.role,
        permissions=args.permission,
        ttl=args.ttl,
    )
    print(token)
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = load_settings()
    setup_logging(settings)
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        asyncio.run(_migrate_async(settings, urls.database, shared_only=args.shared_only))
    finally:
        services.stop()
    return 0


async def _migrate_async(settings: Settings, database_url: str, *, shared_only: bool) -> None:
    from fortemi.platform.database import Database
    from fortemi.platform.memories import MemoryService
    from fortemi.platform.memories.service import DEFAULT_MEMORY
    from fortemi.platform.migrations import Migrations

    db = await Database.connect(database_url, min_size=1, max_size=2)
    try:
        migrations = Migrations(settings.migrations_dir)
        applied = await migrations.migrate_shared(db)
        print(f"shared: {len(applied)} migration(s) applied")
        memories = MemoryService(db, migrations)
        await memories.ensure(DEFAULT_MEMORY, default=True)
        if not shared_only:
            for memory in await memories.list():
                await memories.resolve(memory.name)
            print(f"memories: all at template version {migrations.memory_version}")
    finally:
        await db.close()


def _audit(args: argparse.Namespace) -> int:
    from fortemi.auth.audit import AuditKeyring, read_heads
    from fortemi.platform.embedded import EmbeddedServices
    from fortemi.platform.errors import BadUserInput

    settings = load_settings()
    try:
        keyring = AuditKeyring.from_settings(settings)
    except ValueError as exc:
        raise SystemExit(f"fortemi: invalid configuration: {exc}") from None
    heads: list[Pin] = []
    if args.audit_command == "verify" and args.heads is not None:
        try:
            with open(args.heads, encoding="utf-8") as file:
                heads = read_heads(file)
        except (OSError, BadUserInput) as exc:
            raise SystemExit(f"fortemi: cannot use {args.heads}: {exc}") from None
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        return asyncio.run(_audit_async(args, urls.database, keyring, heads))
    finally:
        services.stop()


async def _audit_async(
    args: argparse.Namespace, database_url: str, keyring: AuditKeyring, heads: list[Pin]
) -> int:
    from fortemi.auth.audit import export, export_heads, verify
    from fortemi.platform.database import Database

    db = await Database.connect(database_url, min_size=1, max_size=2)
    try:
        if args.audit_command == "verify":
            result = await verify(db, keyring, since=args.since, heads=heads)
            if result.ok:
                print(f"ok: {result.checked} rows, every chain intact")
                return 0
            print(
                f"BROKEN at row {result.first_broken_id}: {result.problem} "
                f"({result.checked} rows checked)"
            )
            return 1
        if args.audit_command == "heads":
            count = await export_heads(db, sys.stdout)
            print(f"{count} segment heads exported", file=sys.stderr)
            return 0
        written = await export(db, sys.stdout, fmt=args.format, since=args.since)
        print(f"{written} rows exported", file=sys.stderr)
        return 0
    finally:
        await db.close()


def _timestamp(text: str) -> Any:
    from datetime import datetime

    from fortemi.platform.times import assume_utc

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return assume_utc(moment)


def _schema(args: argparse.Namespace) -> int:
    from fortemi.graphql.schema import build_schema, print_sdl

    sdl = print_sdl(build_schema(load_settings()))
    if args.output:
        Path(args.output).write_text(sdl, encoding="utf-8")
    else:
        sys.stdout.write(sdl)
    return 0


def add_token(commands: Commands) -> None:
    token = commands.add_parser("token", help="mint an access token from the local issuer")
    token.add_argument("--sub", required=True, type=console.nonempty, help="subject (user id)")
    token.add_argument("--group", action="append", default=[], help="group (repeatable)")
    token.add_argument("--role", action="append", default=[], help="role (repeatable)")
    token.add_argument("--permission", action="append", default=[], help="permission (repeatable)")
    token.add_argument(
        "--ttl", type=ttl, default="1h", help="lifetime: 90s, 15m, 1h, 7d (default 1h)"
    )
    token.set_defaults(run=_token)


def add_migrate(commands: Commands) -> None:
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument(
        "--shared-only", action="store_true", help="leave memories to migrate on first access"
    )
    migrate.set_defaults(run=_migrate)


def add_audit(commands: Commands) -> None:
    audit = commands.add_parser("audit", help="check or export the audit log, or its heads")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_commands.add_parser(
        "verify", help="re-check every hash chain (exit 1 if broken)"
    )
    verify.add_argument("--since", type=_timestamp, help="start at rows from this time (UTC)")
    verify.add_argument(
        "--heads", metavar="FILE", help="heads exported earlier; each must still be in its chain"
    )
    audit_commands.add_parser(
        "heads", help="write every segment's head to stdout, to keep apart from the database"
    )
    export = audit_commands.add_parser("export", help="write the log to stdout")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--since", type=_timestamp, help="only rows from this time (UTC)")
    audit.set_defaults(run=_audit)


def add_schema(commands: Commands) -> None:
    schema = commands.add_parser("schema", help="print the GraphQL SDL")
    schema.add_argument("--output", "-o", help="write to this file instead of stdout")
    schema.set_defaults(run=_schema)
