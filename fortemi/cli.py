"""``fortemi serve | worker | token | migrate | audit | schema | vault | ask``: the edge where
settings are built."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import ValidationError

from fortemi import console
from fortemi.crypto import commands as pke_commands
from fortemi.platform.errors import FortemiError
from fortemi.platform.logs import configure_logging
from fortemi.platform.settings import Settings

if TYPE_CHECKING:
    from fortemi.auth.audit import AuditKeyring, Pin

__all__ = ["main"]

_DESCRIPTION = """\
Fortemi: self-hosted, multi-tenant knowledge memory with a GraphQL API.

With nothing configured, `fortemi serve` starts its own PostgreSQL and Redis in the data
directory and prints an admin token; `fortemi token` mints more. Settings come from the
environment (FORTEMI_*, DATABASE_URL, REDIS_URL, OIDC_ISSUER, OLLAMA_HOST): see README.md.
"""
_EPILOG = "Run `fortemi <command> --help` for the options of a command."

log = logging.getLogger("fortemi")


class _Stop(Exception):
    """Raised by our SIGINT/SIGTERM handler so ``finally`` blocks stop what we started."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _settings(**overrides: Any) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise SystemExit(
            f"fortemi: invalid configuration:\n{console.describe_invalid_settings(exc)}"
        ) from None


def _logging(settings: Settings) -> None:
    configure_logging(settings.log_level, settings.log_format)


# -- serve ------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = _settings(host=args.host, port=args.port)
    _logging(settings)
    # Uvicorn restores the previous handlers after its graceful shutdown and re-raises the
    # signal; with these in place that lands as _Stop in our code, not as a hard exit.
    signal.signal(signal.SIGINT, _raise_stop)
    signal.signal(signal.SIGTERM, _raise_stop)
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(_serve_async(settings, urls, workers=not args.no_worker))
    except _Stop as stop:
        log.info("stopped by %s", stop)
    finally:
        # A second Ctrl-C must not cut the servers' shutdown short and leave them running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        services.stop()
    return 0


def _loop_factory() -> Any:
    """uvloop when installed (uvicorn[standard] brings it), else asyncio's default loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - a minimal install without uvicorn[standard]
        return None
    return uvloop.new_event_loop


async def _serve_async(settings: Settings, urls: Any, *, workers: bool) -> None:
    import uvicorn

    from fortemi.app import create_app, settle_heap
    from fortemi.platform.jobs.models import Tier
    from fortemi.runtime import Runtime, job_registry
    from fortemi.workers.pool import WorkerPool
    from fortemi.workers.runtime import WorkerConfig

    runtime = await Runtime.open(settings, urls)
    pool: WorkerPool | None = None
    try:
        if workers:
            # The embedded default runs jobs in this process: Dramatiq worker threads for
            # every tier, with their own event loop and database pool.
            # The local model is loop-agnostic and large: the workers share the server's. A
            # remote backend's client belongs to its event loop, so workers make their own.
            shared = runtime.backend if runtime.backend.name == "local" else None
            pool = WorkerPool(
                runtime.broker,
                WorkerConfig.from_settings(
                    settings,
                    urls.database,
                    redis_url=urls.redis,
                    registry=job_registry(settings, backend=shared),
                ),
            )
            await asyncio.to_thread(pool.start, list(Tier), settings.worker_threads)
        app = create_app(runtime)
        settle_heap()
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            lifespan="off",
            log_level=settings.log_level.lower(),
            # uvicorn's loggers propagate to ours, so its lines share our format.
            log_config=None,
            server_header=False,
            ws_max_size=settings.max_ws_message_bytes,
        )
        server = uvicorn.Server(config)
        banner = asyncio.create_task(_banner(server, runtime))
        try:
            await server.serve()
        finally:
            banner.cancel()
    finally:
        if pool is not None:
            await asyncio.to_thread(pool.stop)
        await runtime.close()


async def _banner(server: Any, runtime: Any) -> None:
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await asyncio.sleep(0.05)
    settings = runtime.settings
    lines = [f"Fortemi GraphQL: {settings.base_url}/graphql"]
    if not settings.is_production:
        lines.append("GraphiQL: open the URL above in a browser; paste the token into its field")
    if runtime.issuer is not None:
        token = runtime.issuer.mint("admin", roles=["admin"], ttl=_ttl("24h"))
        lines.append("admin token (24h, role admin):")
        lines.append(f"token: {token}")
        example = "--sub alice --group platform-team --role editor --ttl 1h"
        lines.append(f"mint more: {_token_command(settings)} {example}")
    print("\n".join(lines), flush=True)


def _token_command(settings: Settings) -> str:
    """A shell command minting tokens this server accepts, runnable as printed."""
    # A token is signed by the key in the data directory and names the issuer (the base
    # URL) and audience: each setting behind those that is not at its default is repeated.
    names = {
        "home": "FORTEMI_HOME",
        "host": "FORTEMI_HOST",
        "port": "FORTEMI_PORT",
        "public_url": "FORTEMI_PUBLIC_URL",
        "oidc_audience": "OIDC_AUDIENCE",
    }
    fields = Settings.model_fields
    env = ""
    for name, variable in names.items():
        value = getattr(settings, name)
        if value != fields[name].get_default(call_default_factory=True):
            # A relative data directory would name another one from another directory.
            shown = value.absolute() if isinstance(value, Path) else value
            env += f"{variable}={shlex.quote(str(shown))} "
    return f"{env}{console.program()} token"


# -- worker -----------------------------------------------------------------------------------


def _worker(args: argparse.Namespace) -> int:
    from fortemi.platform.jobs.models import Tier
    from fortemi.runtime import job_registry
    from fortemi.workers.pool import run_worker_process

    settings = _settings()
    _logging(settings)
    tiers = [Tier(tier) for tier in (args.tier or [t.value for t in Tier])]
    if args.metrics_port is None:
        return run_worker_process(
            settings,
            tiers,
            args.threads or settings.worker_threads,
            registry=job_registry(settings),
        )
    from prometheus_client import start_http_server

    # This process's job runs (fortemi_job_run_*) for a scraper; live job counts come from
    # the API's /metrics, which reads them from PostgreSQL.
    server, thread = start_http_server(args.metrics_port, addr=settings.host)
    try:
        return run_worker_process(
            settings,
            tiers,
            args.threads or settings.worker_threads,
            registry=job_registry(settings),
        )
    finally:
        server.shutdown()
        thread.join()


# -- token ------------------------------------------------------------------------------------


def _ttl(text: str) -> Any:
    """A token lifetime; as an argument type, a bad one is a one-line usage error."""
    from fortemi.auth.local_issuer import parse_ttl

    try:
        return parse_ttl(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _token(args: argparse.Namespace) -> int:
    from fortemi.auth.local_issuer import LocalIssuer

    settings = _settings()
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


# -- migrate ----------------------------------------------------------------------------------


def _migrate(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = _settings()
    _logging(settings)
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


# -- audit ------------------------------------------------------------------------------------


def _audit(args: argparse.Namespace) -> int:
    from fortemi.auth.audit import AuditKeyring, read_heads
    from fortemi.platform.embedded import EmbeddedServices
    from fortemi.platform.errors import BadUserInput

    settings = _settings()
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


# -- vault ------------------------------------------------------------------------------------


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

    url = os.environ.get("FORTEMI_URL") or _settings().base_url
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


# -- ask --------------------------------------------------------------------------------------


def _ask(args: argparse.Namespace) -> int:
    import os

    from fortemi.wiki.answers.client import ASK_QUERY, print_answer
    from fortemi.wiki.vaults.client import VaultClient

    url = os.environ.get("FORTEMI_URL") or _settings().base_url
    question = " ".join(args.question)
    variables = {
        "input": {
            "question": question,
            "project": args.project,
            "vault": args.vault,
            "tier": args.tier.upper(),
            "tokenBudget": args.token_budget,
        }
    }
    # The vault sync's GraphQL client: same FORTEMI_URL/FORTEMI_TOKEN, same error lines.
    client = VaultClient(url, os.environ.get("FORTEMI_TOKEN"), args.memory, timeout=args.timeout)
    try:
        return print_answer(client.request(ASK_QUERY, variables, "ask"))
    finally:
        client.close()


# -- schema -----------------------------------------------------------------------------------


def _schema(args: argparse.Namespace) -> int:
    from fortemi.graphql.schema import build_schema, print_sdl

    sdl = print_sdl(build_schema(_settings()))
    if args.output:
        Path(args.output).write_text(sdl, encoding="utf-8")
    else:
        sys.stdout.write(sdl)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fortemi",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"fortemi {console.program_version()}"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, title="commands", metavar="<command>"
    )
    for add in (
        _add_serve,
        _add_worker,
        _add_token,
        _add_migrate,
        _add_audit,
        _add_schema,
        _add_vault,
        _add_ask,
        pke_commands.add_commands,
    ):
        add(commands)
    return parser


Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_serve(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the GraphQL server")
    serve.add_argument("--host", help="bind address (FORTEMI_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=console.port, help="port (FORTEMI_PORT, default 8000)")
    serve.add_argument(
        "--no-worker", action="store_true", help="run no jobs here (run `fortemi worker`)"
    )
    serve.set_defaults(run=_serve)


def _add_worker(commands: Commands) -> None:
    worker = commands.add_parser("worker", help="run background jobs of some tiers")
    worker.add_argument(
        "--tier",
        action="append",
        choices=["cpu", "fast_gpu", "standard_gpu"],
        help="a tier to run (repeatable; default all)",
    )
    worker.add_argument(
        "--threads", type=console.positive_int, help="job threads (FORTEMI_WORKER_THREADS)"
    )
    worker.add_argument(
        "--metrics-port",
        type=console.port,
        help="serve this worker's metrics on FORTEMI_HOST at this port (/metrics)",
    )
    worker.set_defaults(run=_worker)


def _add_token(commands: Commands) -> None:
    token = commands.add_parser("token", help="mint an access token from the local issuer")
    token.add_argument("--sub", required=True, type=console.nonempty, help="subject (user id)")
    token.add_argument("--group", action="append", default=[], help="group (repeatable)")
    token.add_argument("--role", action="append", default=[], help="role (repeatable)")
    token.add_argument("--permission", action="append", default=[], help="permission (repeatable)")
    token.add_argument(
        "--ttl", type=_ttl, default="1h", help="lifetime: 90s, 15m, 1h, 7d (default 1h)"
    )
    token.set_defaults(run=_token)


def _add_migrate(commands: Commands) -> None:
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument(
        "--shared-only", action="store_true", help="leave memories to migrate on first access"
    )
    migrate.set_defaults(run=_migrate)


def _add_audit(commands: Commands) -> None:
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


def _add_schema(commands: Commands) -> None:
    schema = commands.add_parser("schema", help="print the GraphQL SDL")
    schema.add_argument("--output", "-o", help="write to this file instead of stdout")
    schema.set_defaults(run=_schema)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"must be more than 0 and less than a day: {text!r}")
    return value


def _add_vault(commands: Commands) -> None:
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
        "--flavour", choices=["dendron"], help="the vault's dialect (found by dendron.yml)"
    )
    sync.add_argument("--dry-run", action="store_true", help="report what would change")
    sync.add_argument("--watch", action="store_true", help="keep syncing changes (Ctrl-C stops)")
    sync.add_argument(
        "--interval", type=_seconds, default=2.0, help="seconds between polls with --watch"
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


def _add_ask(commands: Commands) -> None:
    ask = commands.add_parser(
        "ask",
        help="answer a question from a project's notes, with citations (FORTEMI_URL, "
        "FORTEMI_TOKEN)",
        description="Ask the server at FORTEMI_URL (default: the local server) a question, "
        "answered from the notes the token in FORTEMI_TOKEN may read. Prints the answer and "
        "its sources; without a generation backend (OLLAMA_HOST), the reason and the notes "
        "the plan selected. Exit code 3 when there is no answer.",
    )
    ask.add_argument("question", nargs="+", help="the question")
    ask.add_argument("--project", help="answer within this project's reach")
    ask.add_argument("--vault", help="only notes synced from this vault")
    ask.add_argument("--memory", help="the memory to ask in (default: the server's)")
    ask.add_argument("--tier", choices=["fast", "standard"], default="fast")
    ask.add_argument(
        "--token-budget", type=console.positive_int, default=4096, help="most prompt tokens"
    )
    ask.add_argument("--timeout", type=_seconds, default=300.0, help="seconds to wait")
    ask.set_defaults(run=_ask)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        with console.closed_pipe_guard():
            result: int = args.run(args)
    except FortemiError as exc:
        # An error a person can act on (a server down, bad input): its message, no traceback.
        raise SystemExit(f"fortemi {args.command}: {exc.message}") from None
    return result
