"""``python -m benchmarks._server {fortemi|strawberry|starlette} --port P --home DIR``.

One uvicorn worker on 127.0.0.1, started by :class:`benchmarks._common.ServerProcess`:
access log off, log level warning, lifespan off (as ``fortemi serve``), and the event loop
and HTTP parser named on the command line, so all apps in a run are served alike.
``fortemi`` opens a :class:`~fortemi.runtime.Runtime` over ``DATABASE_URL``/``REDIS_URL``
(set by the parent) with its issuer key in ``--home``. SIGTERM and SIGINT stop it
gracefully, and the runtime is closed after the server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from benchmarks._bare import starlette_app, strawberry_app
from fortemi.app import create_app, settle_heap
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime

__all__ = ["bench_settings", "main"]


def bench_settings(home: Path, port: int) -> Settings:
    """The settings of a benchmarked Fortemi server (the local issuer, whatever the env)."""
    # By alias, as the environment would set it; None wins over an OIDC_ISSUER in the env.
    no_oidc: dict[str, Any] = {"OIDC_ISSUER": None}
    return Settings(home=home, host="127.0.0.1", port=port, **no_oidc)


async def _serve(args: argparse.Namespace) -> None:
    settings = bench_settings(Path(args.home), args.port)
    runtime: Runtime | None = None
    app: ASGIApp
    if args.app == "fortemi":
        assert settings.database_url is not None
        assert settings.redis_url is not None
        urls = ServiceUrls(
            database=settings.database_url.get_secret_value(),
            redis=settings.redis_url.get_secret_value(),
        )
        runtime = await Runtime.open(settings, urls)
        app = create_app(runtime)
        settle_heap()  # as ``fortemi serve`` does
    elif args.app == "strawberry":
        app = strawberry_app(settings.graphql_cache_size)
    else:
        app = starlette_app()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.port,
        http=args.http,
        # Fortemi's lifespan runs its MCP session manager; the other apps have none.
        lifespan="on" if args.app == "fortemi" else "off",
        log_level="warning",
        access_log=False,
        server_header=False,
    )
    server = uvicorn.Server(config)
    # Our handlers, not uvicorn's: uvicorn re-raises the signal after shutting down, which
    # would kill the process before the runtime is closed.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign, assignment]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, setattr, server, "should_exit", True)
    try:
        await server.serve()
    finally:
        if runtime is not None:
            await runtime.close()


def _loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("app", choices=["fortemi", "strawberry", "starlette"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", required=True)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="uvloop")
    parser.add_argument("--http", choices=["h11", "httptools"], default="httptools")
    args = parser.parse_args()
    with asyncio.Runner(loop_factory=_loop_factory(args.loop)) as runner:
        runner.run(_serve(args))


if __name__ == "__main__":
    main()
