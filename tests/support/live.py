"""Serving an app variant (other settings, other policies) on its own loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn
from starlette.types import ASGIApp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def serve(app: ASGIApp, *, lifespan: bool = False) -> AsyncIterator[str]:
    """``app`` served by uvicorn in this event loop; yields ``host:port``, stops on exit.
    ``lifespan``: run the app's lifespan (MCP's session manager lives in it)."""
    port = _free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="on" if lifespan else "off",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    # pytest owns SIGINT; uvicorn must not capture it.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
