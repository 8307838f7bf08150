"""Throughput of an authenticated ``{ me { sub } }`` against one uvicorn worker.

``python -m benchmarks.http [--concurrency 16] [--seconds 10 | --requests N] [--home DIR]``

Three servers, each one uvicorn worker in its own subprocess, served alike (same event
loop, same HTTP parser, access log off, log level warning, route ``POST /graphql``):

* ``fortemi``: the real app (``fortemi.app.create_app`` over a Runtime on the embedded
  PostgreSQL + Redis, or DATABASE_URL / REDIS_URL); the bearer token is validated on
  every request (ES256, local issuer) and all of Fortemi's schema extensions run;
* ``strawberry``: a bare one-field schema, ``{ hello }``, with the same parser and
  validation caches and nothing else (``benchmarks._bare``);
* ``starlette``: a plain endpoint that parses the JSON body and answers fixed JSON, the
  ceiling for any GraphQL server on this HTTP stack.

Why subprocesses: the load generator shares the machine with the server, and a client in
the server's process and event loop would take its CPU from the request handling being
measured. The client (``--concurrency`` keep-alive connections, one coroutine per
connection, uvloop when installed) runs in this process; it is the raw HTTP/1.1 client of
:mod:`benchmarks._client` by default, because httpx costs the client more CPU per request
than a bare Strawberry server costs the server (``--client httpx`` shows it). The servers start
together and are loaded one at a time (idle ones cost nothing), ``--rounds`` times in turn.
Every app gets the same request bytes, the token included.

Reading the figures: "server CPU us/req" (the worker's user+system CPU per request) is
the cost of a request independent of the client; "client CPU %" near 100 means the
client, not the server, limits that row's requests/s (expect that for the ceiling).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from benchmarks._client import Poster, describe, open_posters
from benchmarks._common import (
    HOST,
    Latency,
    ServerProcess,
    backing_services,
    bench_home,
    client_loop_factory,
    client_option,
    common_setup,
    free_ports,
    ms,
    print_setup,
    server_options,
    table,
)
from benchmarks._server import bench_settings
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.embedded import ServiceUrls

__all__ = ["main"]

GOAL_RATIO = 0.7
MAX_REQUESTS = 10_000_000  # bounds the time-limited loop too
QUERIES = {"fortemi": "{ me { sub } }", "strawberry": "{ hello }", "starlette": "{ hello }"}
EXPECTED = {
    "fortemi": {"data": {"me": {"sub": "bench"}}},
    "strawberry": {"data": {"hello": "world"}},
    "starlette": {"data": {"hello": "world"}},
}
LABELS = {
    "fortemi": "Fortemi { me { sub } }",
    "strawberry": "bare Strawberry { hello }",
    "starlette": "plain Starlette JSON",
}


@dataclass
class Totals:
    """One app's samples, summed over rounds."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    wall: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0


async def _load(
    posters: Sequence[Poster],
    body: bytes,
    *,
    seconds: float | None,
    requests: int | None,
    into: Totals | None,
) -> None:
    """One worker per poster POSTs ``body`` until the time or the request budget runs out."""
    deadline = time.perf_counter() + seconds if seconds is not None else math.inf
    budget = min(requests or MAX_REQUESTS, MAX_REQUESTS)
    latencies: list[float] = []
    errors = 0

    async def worker(poster: Poster) -> None:
        nonlocal budget, errors
        while budget > 0 and time.perf_counter() < deadline:
            budget -= 1
            started = time.perf_counter()
            status, content = await poster.post(body)
            latencies.append(time.perf_counter() - started)
            if status != 200 or b'"errors"' in content:
                errors += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(poster) for poster in posters))
    if into is not None:
        into.wall += time.perf_counter() - started
        into.latencies += latencies
        into.errors += errors


async def _check(poster: Poster, app: str, body: bytes) -> None:
    status, content = await poster.post(body)
    if status != 200 or json.loads(content) != EXPECTED[app]:
        raise RuntimeError(f"{app}: unexpected answer {status}: {content[:500]!r}")


async def _measure(
    args: argparse.Namespace, servers: dict[str, ServerProcess], token: str
) -> dict[str, Totals]:
    totals = {app: Totals() for app in servers}
    headers = {"authorization": f"Bearer {token}"}
    for _ in range(args.rounds):
        for app, server in servers.items():
            body = json.dumps({"query": QUERIES[app]}).encode()
            posters = await open_posters(args.client, HOST, server.port, headers, args.concurrency)
            try:
                await _check(posters[0], app, body)
                await _load(posters, body, seconds=args.warmup_seconds, requests=None, into=None)
                cpu, own = server.cpu_seconds(), time.process_time()
                await _load(
                    posters, body, seconds=args.seconds, requests=args.requests, into=totals[app]
                )
                totals[app].server_cpu += server.cpu_seconds() - cpu
                totals[app].client_cpu += time.process_time() - own
            finally:
                for poster in posters:
                    await poster.aclose()
    return totals


def _report(totals: dict[str, Totals]) -> None:
    headers = [
        "app",
        "requests",
        "errors",
        "req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "server CPU %",
        "server CPU us/req",
        "client CPU %",
    ]
    rows = []
    for app, t in totals.items():
        lat = Latency.of(t.latencies)
        rows.append(
            [
                LABELS[app],
                str(lat.count),
                str(t.errors),
                f"{lat.count / t.wall:.0f}",
                ms(lat.p50),
                ms(lat.p95),
                ms(lat.p99),
                f"{100 * t.server_cpu / t.wall:.0f}",
                f"{1e6 * t.server_cpu / lat.count:.0f}",
                f"{100 * t.client_cpu / t.wall:.0f}",
            ]
        )
    print(table(headers, rows, "lrrrrrrrrr"))
    print()
    fortemi, bare = totals["fortemi"], totals["strawberry"]
    ratio = (len(fortemi.latencies) / fortemi.wall) / (len(bare.latencies) / bare.wall)
    cost = (fortemi.server_cpu / len(fortemi.latencies)) / (bare.server_cpu / len(bare.latencies))
    met = "met" if ratio >= GOAL_RATIO else "NOT met"
    comparison = [
        ["requests/s, Fortemi / bare Strawberry", f"{ratio:.2f}x", f">= {GOAL_RATIO}x", met],
        ["server CPU per request, Fortemi / bare Strawberry", f"{cost:.2f}x", "", ""],
    ]
    print(table(["comparison", "ratio", "goal", "result"], comparison, "lrll"), flush=True)


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    servers = {
        app: ServerProcess(app, port=port, home=home, urls=urls, loop=args.loop, http=args.http)
        for app, port in zip(QUERIES, free_ports(len(QUERIES)), strict=True)
    }
    settings = bench_settings(home, servers["fortemi"].port)
    # Created before the servers start, so no two processes race to create the key.
    issuer = LocalIssuer.load_or_create(home, settings.issuer, settings.oidc_audience)
    token = issuer.mint("bench", roles=["editor"], ttl=timedelta(hours=12))
    _, loop_name = client_loop_factory()
    budget = f"{args.requests} requests" if args.requests else f"{args.seconds:g} s"
    setup += [
        (
            "servers",
            f"uvicorn, 1 worker each in its own subprocess, loop {args.loop}, http "
            f"{args.http}, access log off, log level warning",
        ),
        (
            "client",
            f"{describe(args.client)} in the main process, loop {loop_name}, "
            f"{args.concurrency} keep-alive connections, one worker coroutine each",
        ),
        (
            "workload",
            f"concurrency {args.concurrency}, {budget} per app per round after "
            f"{args.warmup_seconds:g} s warm-up, {args.rounds} round(s)",
        ),
    ]
    print_setup("benchmarks.http: authenticated { me { sub } } vs bare Strawberry", setup)
    started: list[ServerProcess] = []
    try:
        for server in servers.values():
            await server.start()
            started.append(server)
        totals = await _measure(args, servers, token)
    finally:
        for server in started:
            await server.stop()
    _report(totals)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.http", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--concurrency", type=int, default=16, help="connections (default 16)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=float, default=10.0, help="per app (default 10)")
    budget.add_argument("--requests", type=int, help="a fixed count per app instead of --seconds")
    parser.add_argument("--warmup-seconds", type=float, default=2.0, help="per app (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="times each app is loaded in turn")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    client_option(parser)
    server_options(parser)
    args = parser.parse_args(argv)
    if args.requests is not None:
        args.seconds = None
    if args.concurrency < 1 or args.rounds < 1 or (args.requests is not None and args.requests < 1):
        parser.error("--concurrency, --rounds and --requests must be positive")
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
