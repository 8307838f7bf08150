"""Headless Chromium (Debian's package), driven over the DevTools protocol.

A real browser for the pages the server renders: :func:`chromium` starts one in its own
process group with a throwaway profile and no network beyond loopback (every other host
name fails to resolve), and kills the whole group on exit, renderers included.
:class:`Page` is the little of the protocol the tests need: navigate, evaluate, type,
and wait for a condition with a generous bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

__all__ = ["Page", "chromium"]

_INSTALL_HINT = (
    "the GraphiQL browser test needs Chromium: install it with "
    "`apt-get install -y chromium` (Debian/Ubuntu; `make test` does it when run as root), "
    "or point FORTEMI_TEST_CHROMIUM at a Chromium or Chrome executable"
)
# Bounds for conditions polled on a loaded, shared machine: generous, never asserted.
_STARTUP_BOUND = 120.0
WAIT_BOUND = 120.0


def _executable() -> str:
    given = os.environ.get("FORTEMI_TEST_CHROMIUM")
    found = given or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail(_INSTALL_HINT, pytrace=False)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _DevTools:
    """One DevTools connection: replies matched to calls by id, events kept in order."""

    def __init__(self, connection: ClientConnection) -> None:
        self._connection = connection
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self._connection:
            message = json.loads(raw)
            waiter = self._pending.pop(message.get("id", -1), None)
            if waiter is not None:
                if not waiter.done():
                    waiter.set_result(message)
            elif "method" in message:
                self.events.append(message)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        message_id = next(self._ids)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message_id] = waiter
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        await self._connection.send(json.dumps(message))
        reply = await asyncio.wait_for(waiter, WAIT_BOUND)
        if "error" in reply:
            raise AssertionError(f"{method} failed: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class Page:
    """One browser tab, attached over a flat DevTools session."""

    def __init__(self, devtools: _DevTools, session_id: str) -> None:
        self._devtools = devtools
        self._session_id = session_id

    @property
    def events(self) -> list[dict[str, Any]]:
        """The tab's protocol events so far (network requests, console, log entries)."""
        return [e for e in self._devtools.events if e.get("sessionId") == self._session_id]

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._devtools.call(method, params, self._session_id)

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", {"url": url})

    async def evaluate(self, expression: str) -> Any:
        reply = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in reply:
            raise AssertionError(f"{expression!r} threw: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def insert_text(self, text: str) -> None:
        """Type ``text`` into the focused element, as a keyboard would."""
        await self.send("Input.insertText", {"text": text})

    async def wait_for(self, expression: str, what: str) -> Any:
        """Poll ``expression`` until it is truthy; fail after a generous bound."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_BOUND
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if loop.time() > deadline:
                text = await self.evaluate("document.body ? document.body.innerText : ''")
                raise AssertionError(f"never saw {what}; the page reads:\n{str(text)[:2000]}")
            await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def chromium(profile: Path) -> AsyncIterator[Page]:
    """A headless Chromium with one blank tab; the browser and its children die on exit."""
    port = _free_port()
    log = (profile / "chromium.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        *[
            _executable(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            # No internet: any host but loopback fails to resolve, as on an offline machine.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={profile / 'profile'}",
            "about:blank",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, killed as one below
    )
    try:
        endpoint = await _devtools_endpoint(port, process, profile)
        async with websockets.connect(endpoint, max_size=None) as connection:
            devtools = _DevTools(connection)
            try:
                yield await _open_tab(devtools)
            finally:
                await devtools.close()
    finally:
        children = _children(process.pid)
        await _kill_group(process)
        log.close()
        leftovers = await _survivors(children)
        for child in leftovers:
            child.kill()
        assert leftovers == [], f"Chromium left processes behind: {leftovers}"


async def _devtools_endpoint(port: int, process: asyncio.subprocess.Process, profile: Path) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _STARTUP_BOUND
    async with httpx.AsyncClient() as client:
        while True:
            if process.returncode is not None:
                log = (profile / "chromium.log").read_text(errors="replace")
                raise AssertionError(f"Chromium exited with {process.returncode}:\n{log}")
            with contextlib.suppress(httpx.TransportError):
                version = await client.get(f"http://127.0.0.1:{port}/json/version")
                url: str = version.json()["webSocketDebuggerUrl"]
                return url
            if loop.time() > deadline:
                raise AssertionError("Chromium never opened its DevTools port")
            await asyncio.sleep(0.1)


async def _open_tab(devtools: _DevTools) -> Page:
    target = await devtools.call("Target.createTarget", {"url": "about:blank"})
    attached = await devtools.call(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
    )
    page = Page(devtools, attached["sessionId"])
    for domain in ("Page.enable", "Runtime.enable", "Network.enable", "Log.enable"):
        await page.send(domain)
    return page


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), 30)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
    # Renderers may outlive the browser by a moment; the group goes with them.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _alive(process: psutil.Process) -> bool:
    # A zombie has exited; it only waits to be reaped by whichever process adopted it.
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


async def _survivors(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those of ``processes`` still alive once a generous bound has passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    alive = [p for p in processes if _alive(p)]
    while alive and loop.time() < deadline:
        await asyncio.sleep(0.1)
        alive = [p for p in alive if _alive(p)]
    return alive
