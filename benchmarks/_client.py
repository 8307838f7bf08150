"""The load generators' HTTP clients: a minimal raw HTTP/1.1 one, and httpx.

Both POST pre-encoded JSON bodies to ``/graphql`` over keep-alive connections and return
``(status, body)``. The raw client exists because the load generator shares the machine
with the server: httpx spends over a millisecond of CPU per request at concurrency 16
(its connection pool does work per pending request), so it saturates its core before a
bare Strawberry server does, and the figures would measure httpx. The raw client writes
one request and reads one ``Content-Length``-framed response per round trip, nothing
more, and so costs a few tens of microseconds. ``--client httpx`` keeps the httpx figure
reproducible.
"""

from __future__ import annotations

import asyncio
from typing import Literal, Protocol

import httpx

__all__ = ["ClientName", "Poster", "RawPoster", "describe", "open_posters"]

ClientName = Literal["raw", "httpx"]


class Poster(Protocol):
    """POSTs bodies to ``/graphql``; one poster serves one worker coroutine at a time."""

    async def post(self, body: bytes) -> tuple[int, bytes]: ...

    async def aclose(self) -> None: ...


class RawPoster:
    """One keep-alive HTTP/1.1 connection; responses must carry Content-Length."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._head = head

    @classmethod
    async def open(
        cls, host: str, port: int, headers: dict[str, str], path: str = "/graphql"
    ) -> RawPoster:
        reader, writer = await asyncio.open_connection(host, port)
        lines = [f"POST {path} HTTP/1.1", f"host: {host}:{port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        return cls(reader, writer, ("\r\n".join(lines) + "\r\n").encode("latin-1"))

    async def post(self, body: bytes) -> tuple[int, bytes]:
        self._writer.write(b"%scontent-length: %d\r\n\r\n%s" % (self._head, len(body), body))
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
                break
        if length is None:
            raise RuntimeError(f"response without Content-Length: {head!r}")
        return status, await self._reader.readexactly(length)

    async def aclose(self) -> None:
        self._writer.close()
        await self._writer.wait_closed()


class _HttpxPoster:
    """A view of a shared httpx.AsyncClient (its pool holds the connections)."""

    def __init__(self, client: httpx.AsyncClient, owner: bool) -> None:
        self._client = client
        self._owner = owner

    async def post(self, body: bytes) -> tuple[int, bytes]:
        response = await self._client.post("/graphql", content=body)
        return response.status_code, response.content

    async def aclose(self) -> None:
        if self._owner:
            await self._client.aclose()


async def open_posters(
    kind: ClientName, host: str, port: int, headers: dict[str, str], connections: int
) -> list[Poster]:
    """``connections`` posters: raw ones each own a connection; httpx ones share a pool of
    ``connections`` keep-alive connections (the first one closes it)."""
    headers = {**headers, "content-type": "application/json"}
    if kind == "raw":
        return [await RawPoster.open(host, port, headers) for _ in range(connections)]
    client = httpx.AsyncClient(
        base_url=f"http://{host}:{port}",
        headers=headers,
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        timeout=30,
    )
    return [_HttpxPoster(client, owner=i == 0) for i in range(connections)]


def describe(kind: ClientName) -> str:
    if kind == "raw":
        return "raw HTTP/1.1 over asyncio streams (benchmarks._client)"
    return f"httpx {httpx.__version__} AsyncClient"
