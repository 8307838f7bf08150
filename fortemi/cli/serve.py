"""``fortemi serve`` (the GraphQL server, with its jobs in-process unless told not to) and
``fortemi worker`` (background jobs of some tiers, in a process of their own)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import signal
from pathlib import Path
from typing import Any

from fortemi import console
from fortemi.cli.common import Commands, Stop, load_settings, raise_stop, setup_logging, ttl
from fortemi.platform.settings import Settings

__all__ = ["add_serve", "add_worker"]

log = logging.getLogger("fortemi")


def _serve(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = load_settings(host=args.host, port=args.port)
    setup_logging(settings)
    # Uvicorn restores the previous handlers after its graceful shutdown and re-raises the
    # signal; with these in place that lands as Stop in our code, not as a hard exit.
    signal.signal(signal.SIGINT, raise_stop)
    signal.signal(signal.SIGTERM, raise_stop)
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(_serve_async(settings, urls, workers=not args.no_worker))
    except Stop as stop:
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
            lifespan="on",  # the app's lifespan runs the MCP session manager
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
    lines = [
        f"Fortemi GraphQL: {settings.base_url}/graphql",
        f"MCP for agents: {settings.base_url}/mcp (stdio: fortemi mcp, with FORTEMI_TOKEN)",
    ]
    if not settings.is_production:
        lines.append("GraphiQL: open the URL above in a browser; paste the token into its field")
    if runtime.issuer is not None:
        token = runtime.issuer.mint("admin", roles=["admin"], ttl=ttl("24h"))
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


def _worker(args: argparse.Namespace) -> int:
    from fortemi.platform.jobs.models import Tier
    from fortemi.runtime import job_registry
    from fortemi.workers.pool import run_worker_process

    settings = load_settings()
    setup_logging(settings)
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


def add_serve(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the GraphQL server")
    serve.add_argument("--host", help="bind address (FORTEMI_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=console.port, help="port (FORTEMI_PORT, default 8000)")
    serve.add_argument(
        "--no-worker", action="store_true", help="run no jobs here (run `fortemi worker`)"
    )
    serve.set_defaults(run=_serve)


def add_worker(commands: Commands) -> None:
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
