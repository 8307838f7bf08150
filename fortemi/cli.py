"""``fortemi serve | migrate | token | schema``: the edge where settings are built."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from pydantic import ValidationError

from fortemi.platform.settings import Settings

__all__ = ["main"]

log = logging.getLogger("fortemi")


class _Stop(Exception):
    """Raised by our SIGINT/SIGTERM handler so ``finally`` blocks stop what we started."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _settings(**overrides: Any) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise SystemExit(f"fortemi: invalid configuration:\n{exc}") from None


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # pgserver logs every initdb/pg_ctl command line and its output at INFO.
    logging.getLogger("pgserver").setLevel(
        max(logging.WARNING, logging.getLevelName(level.upper()))
    )


# -- serve ------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = _settings(host=args.host, port=args.port)
    _logging(settings.log_level)
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

    from fortemi.app import create_app
    from fortemi.runtime import Runtime
    from fortemi.workers.jobs.models import Tier
    from fortemi.workers.pool import WorkerPool
    from fortemi.workers.runtime import WorkerConfig, builtin_registry

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
                    registry=builtin_registry(settings, backend=shared),
                ),
            )
            await asyncio.to_thread(pool.start, list(Tier), settings.worker_threads)
        config = uvicorn.Config(
            create_app(runtime),
            host=settings.host,
            port=settings.port,
            lifespan="off",
            log_level=settings.log_level.lower(),
            server_header=False,
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
        lines.append("GraphiQL: open the URL above; send the token as 'Authorization: Bearer ...'")
    if runtime.issuer is not None:
        token = runtime.issuer.mint("admin", roles=["admin"], ttl=_ttl("24h"))
        lines.append("admin token (24h, role admin):")
        lines.append(f"token: {token}")
        # Tokens name the issuer (this server's base URL): minting for a non-default
        # host/port needs the same values.
        defaults = Settings.model_fields
        env = "".join(
            f"FORTEMI_{name.upper()}={getattr(settings, name)} "
            for name in ("host", "port")
            if getattr(settings, name) != defaults[name].default
        )
        example = "--sub alice --group platform-team --role editor --ttl 1h"
        lines.append(f"mint more: {env}fortemi token {example}")
    print("\n".join(lines), flush=True)


# -- worker -----------------------------------------------------------------------------------


def _worker(args: argparse.Namespace) -> int:
    from fortemi.workers.jobs.models import Tier
    from fortemi.workers.pool import run_worker_process

    settings = _settings()
    _logging(settings.log_level)
    tiers = [Tier(tier) for tier in (args.tier or [t.value for t in Tier])]
    return run_worker_process(settings, tiers, args.threads or settings.worker_threads)


# -- token ------------------------------------------------------------------------------------


def _ttl(text: str) -> Any:
    from fortemi.auth.local_issuer import parse_ttl

    try:
        return parse_ttl(text)
    except ValueError as exc:
        raise SystemExit(f"fortemi token: --ttl: {exc}") from None


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
        ttl=_ttl(args.ttl),
    )
    print(token)
    return 0


# -- migrate ----------------------------------------------------------------------------------


def _migrate(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = _settings()
    _logging(settings.log_level)
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
    from fortemi.platform.embedded import EmbeddedServices

    settings = _settings()
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        return asyncio.run(_audit_async(args, urls.database))
    finally:
        services.stop()


async def _audit_async(args: argparse.Namespace, database_url: str) -> int:
    from fortemi.auth.audit import export, verify
    from fortemi.platform.database import Database

    db = await Database.connect(database_url, min_size=1, max_size=2)
    try:
        if args.audit_command == "verify":
            result = await verify(db, since=args.since)
            if result.ok:
                print(f"ok: {result.checked} rows, every chain intact")
                return 0
            print(
                f"BROKEN at row {result.first_broken_id}: {result.problem} "
                f"({result.checked} rows checked)"
            )
            return 1
        written = await export(db, sys.stdout, fmt=args.format, since=args.since)
        print(f"{written} rows exported", file=sys.stderr)
        return 0
    finally:
        await db.close()


def _timestamp(text: str) -> Any:
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# -- schema -----------------------------------------------------------------------------------


def _schema(args: argparse.Namespace) -> int:
    from fortemi.graphql.schema import build_schema, print_sdl

    sdl = print_sdl(build_schema(_settings()))
    if args.output:
        Path(args.output).write_text(sdl, encoding="utf-8")
    else:
        sys.stdout.write(sdl)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fortemi", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the GraphQL server")
    serve.add_argument("--host", help="bind address (FORTEMI_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (FORTEMI_PORT, default 8000)")
    serve.add_argument(
        "--no-worker", action="store_true", help="run no jobs here (run `fortemi worker`)"
    )
    serve.set_defaults(run=_serve)

    worker = commands.add_parser("worker", help="run background jobs of some tiers")
    worker.add_argument(
        "--tier",
        action="append",
        choices=["cpu", "fast_gpu", "standard_gpu"],
        help="a tier to run (repeatable; default all)",
    )
    worker.add_argument("--threads", type=int, help="job threads (FORTEMI_WORKER_THREADS)")
    worker.set_defaults(run=_worker)

    token = commands.add_parser("token", help="mint an access token from the local issuer")
    token.add_argument("--sub", required=True, help="subject (user id)")
    token.add_argument("--group", action="append", default=[], help="group (repeatable)")
    token.add_argument("--role", action="append", default=[], help="role (repeatable)")
    token.add_argument("--permission", action="append", default=[], help="permission (repeatable)")
    token.add_argument("--ttl", default="1h", help="lifetime: 90s, 15m, 1h, 7d (default 1h)")
    token.set_defaults(run=_token)

    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument(
        "--shared-only", action="store_true", help="leave memories to migrate on first access"
    )
    migrate.set_defaults(run=_migrate)

    audit = commands.add_parser("audit", help="check or export the audit log")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_commands.add_parser(
        "verify", help="re-check every hash chain (exit 1 if broken)"
    )
    verify.add_argument("--since", type=_timestamp, help="start at rows from this time (UTC)")
    export = audit_commands.add_parser("export", help="write the log to stdout")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--since", type=_timestamp, help="only rows from this time (UTC)")
    audit.set_defaults(run=_audit)

    schema = commands.add_parser("schema", help="print the GraphQL SDL")
    schema.add_argument("--output", "-o", help="write to this file instead of stdout")
    schema.set_defaults(run=_schema)

    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
