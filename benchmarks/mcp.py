"""MCP tool-call latency over Streamable HTTP, beside the same operations over GraphQL.

``python -m benchmarks.mcp [--notes N] [--calls N] [--home DIR]``

One server (the real app in a uvicorn subprocess, as ``fortemi serve`` runs it, its
lifespan running the MCP session manager), one fresh memory with N notes created through
``createNote``. Then, in alternating blocks so both paths see the same server state:

* a trivial call: the ``list_memories`` tool, and the GraphQL document it runs
  (``memories { name isDefault noteCount createdAt }``);
* a search: the ``search_notes`` tool (LEXICAL, limit 10: no embedding model in the loop),
  and the same ``search`` document over GraphQL.

All run as the same editor, one call at a time, over three paths: GraphQL with the raw
HTTP/1.1 client of :mod:`benchmarks._client` (one keep-alive connection); the tool with the
same raw client, sending the self-contained 2026-07-28 ``tools/call`` POST the SDK sends
(what MCP costs the server and the wire); and the tool through the official SDK's
``Client`` over Streamable HTTP (httpx2), as an agent calls it, so that row also holds the
SDK client's own CPU time (pydantic models, output-schema validation of each result).
Latency is from the call to its decoded result; "server CPU" is the uvicorn process's
alone. Goal: MCP p50 <= 1.5x GraphQL's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks._client import Poster, RawPoster, open_posters
from benchmarks._common import (
    HOST,
    Latency,
    ServerProcess,
    Stage,
    backing_services,
    bench_home,
    client_loop_factory,
    common_setup,
    ms,
    print_setup,
    server_options,
    serving,
    table,
)
from benchmarks._notes import payloads
from fortemi.mcp.tools import TOOLS
from fortemi.platform.embedded import ServiceUrls

__all__ = ["main"]

GOAL = 1.5
_DOCS = {spec.name: spec.document for spec in TOOLS}
_CREATE = "mutation C($input: CreateNoteInput!) { createNote(input: $input) { id } }"
SEARCH = {"query": "replica latency", "mode": "LEXICAL", "limit": 10}


@dataclass
class Samples:
    latencies: list[float] = field(default_factory=list)
    server_cpu: float = 0.0


async def _graphql(poster: Poster, document: str, variables: dict[str, Any]) -> None:
    status, body = await poster.post(
        json.dumps({"query": document, "variables": variables}).encode()
    )
    if status != 200 or json.loads(body).get("errors"):
        raise RuntimeError(f"GraphQL call failed ({status}): {body[:300]!r}")


# A 2026-07-28 tools/call is one self-contained POST: what the SDK client sends, byte for
# byte but for the request id, so the raw client can send it too.
_MODERN = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": _MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "benchmarks.mcp", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def _raw_tool(poster: Poster, name: str, arguments: dict[str, Any]) -> None:
    params = {"name": name, "arguments": arguments, "_meta": _META}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    status, body = await poster.post(json.dumps(request).encode())
    reply = json.loads(body)
    if status != 200 or "result" not in reply or reply["result"].get("isError"):
        raise RuntimeError(f"tool {name} failed ({status}): {body[:300]!r}")


async def _raw_tool_poster(port: int, headers: dict[str, str], name: str) -> RawPoster:
    mcp_headers = {
        **headers,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": _MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return await RawPoster.open(HOST, port, mcp_headers, path="/mcp")


async def _tool(client: Client, name: str, arguments: dict[str, Any]) -> None:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"tool {name} failed: {result.structured_content}")


async def _timed(
    call: Callable[[], Awaitable[None]], count: int, into: Samples | None, server: ServerProcess
) -> None:
    cpu = server.cpu_seconds()
    for _ in range(count):
        started = time.perf_counter()
        await call()
        if into is not None:
            into.latencies.append(time.perf_counter() - started)
    if into is not None:
        into.server_cpu += server.cpu_seconds() - cpu


def _row(operation: str, path: str, samples: Samples) -> list[str]:
    lat = Latency.of(samples.latencies)
    cpu = samples.server_cpu / lat.count * 1000
    return [operation, path, str(lat.count), ms(lat.p50), ms(lat.p95), ms(lat.mean), f"{cpu:.2f}"]


def _ratio(label: str, mcp: Samples, graphql: Samples) -> tuple[list[str], float]:
    m, g = Latency.of(mcp.latencies), Latency.of(graphql.latencies)
    p50 = m.p50 / g.p50
    cells = [f"{p50:.2f}x", f"{m.p95 / g.p95:.2f}x", f"{m.mean / g.mean:.2f}x"]
    return ["", f"ratio {label}/GraphQL", "", *cells, ""], p50


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    memory = await stage.open_memory()
    server = ServerProcess(
        "fortemi", port=stage.port, home=home, urls=urls, loop=args.loop, http=args.http
    )
    _, loop_name = client_loop_factory()
    setup += [
        ("server", f"uvicorn, 1 worker in a subprocess, loop {args.loop}, http {args.http}"),
        (
            "clients",
            f"GraphQL and 'MCP, raw client': raw HTTP/1.1, a keep-alive connection each; "
            f"'MCP, SDK client': mcp's Client over Streamable HTTP (httpx2); sequential, "
            f"loop {loop_name}",
        ),
        ("workload", f"{args.notes} notes; {args.calls} calls per row after {args.warmup} "
                     f"warm-up calls, blocks of {args.block} alternating the paths"),
        ("memory", f"{memory}, fresh"),
    ]  # fmt: skip
    headers = {"authorization": f"Bearer {stage.token}", "x-fortemi-memory": memory}
    try:
        async with serving(server):
            [poster] = await open_posters("raw", HOST, server.port, headers, 1)
            try:
                for note in payloads(args.notes, args.seed):
                    await _graphql(poster, _CREATE, {"input": note.graphql_input()})
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=60) as http,
                    Client(
                        streamable_http_client(f"{server.url}/mcp", http_client=http), cache=None
                    ) as client,
                ):
                    setup.append(("MCP protocol", client.protocol_version))
                    print_setup("benchmarks.mcp: MCP tool calls vs the same GraphQL", setup)
                    raw = {
                        name: await _raw_tool_poster(server.port, headers, name)
                        for name in ("list_memories", "search_notes")
                    }
                    try:
                        await _measure(args, poster, raw, client, server)
                    finally:
                        for each in raw.values():
                            await each.aclose()
            finally:
                await poster.aclose()
    finally:
        await stage.memories.delete(memory, confirm=memory)
        await stage.db.close()


async def _measure(
    args: argparse.Namespace,
    poster: Poster,
    raw: dict[str, RawPoster],
    client: Client,
    server: ServerProcess,
) -> None:
    calls = {
        "trivial (list_memories)": ("list_memories", {}),
        "search (search_notes)": ("search_notes", SEARCH),
    }
    rows: list[list[str]] = []
    verdicts: list[list[str]] = []
    for operation, (name, arguments) in calls.items():
        paths: dict[str, Callable[[], Awaitable[None]]] = {
            "GraphQL over HTTP": partial(_graphql, poster, _DOCS[name], arguments),
            "MCP, raw client": partial(_raw_tool, raw[name], name, arguments),
            "MCP, SDK client": partial(_tool, client, name, arguments),
        }
        samples = {path: Samples() for path in paths}
        # Warm-up blocks first, uncounted; blocks stay short, as an idle keep-alive
        # connection is closed by uvicorn after 5 s.
        for total, counted in ((args.warmup, False), (args.calls, True)):
            for start in range(0, total, args.block):
                size = min(args.block, total - start)
                for path, call in paths.items():
                    await _timed(call, size, samples[path] if counted else None, server)
        graphql = samples["GraphQL over HTTP"]
        rows += [_row(operation, path, samples[path]) for path in paths]
        for label in ("MCP, raw client", "MCP, SDK client"):
            ratio_row, p50 = _ratio(label, samples[label], graphql)
            rows.append(ratio_row)
            met = "met" if p50 <= GOAL else "NOT met"
            verdicts.append([f"{label}: p50 <= {GOAL}x GraphQL", operation, f"{p50:.2f}x", met])
    heads = ["operation", "path", "n", "p50 ms", "p95 ms", "mean ms", "server CPU ms/call"]
    print(table(heads, rows, "llrrrrr"))
    print()
    print(table(["goal", "operation", "p50 ratio", "result"], verdicts, "llrl"), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mcp", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--notes", type=int, default=500, help="notes in the memory")
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per row")
    parser.add_argument("--warmup", type=int, default=100, help="uncounted calls per row")
    parser.add_argument("--block", type=int, default=50, help="calls per alternating block")
    parser.add_argument("--seed", type=int, default=1, help="RNG seed for the notes")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    server_options(parser)
    args = parser.parse_args(argv)
    if min(args.notes, args.calls, args.warmup, args.block) < 1:
        parser.error("--notes, --calls, --warmup and --block must be positive")
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
