"""Events fanned out to many concurrent subscriptions: publish-to-receive latency.

``python -m benchmarks.events [--subscriptions 1000] [--per-connection 20] [--events 200]
[--gap-ms 20] [--home DIR]``

Fortemi: one uvicorn worker in a subprocess (``benchmarks._server``, as the other
benchmarks run it) on the embedded PostgreSQL + Redis, or DATABASE_URL / REDIS_URL. This
process opens N ``noteEvents`` subscriptions over ``graphql-transport-ws``, at most
``--per-connection`` on each WebSocket (the server caps them, ``ws_max_subscriptions``; the
server is started with that cap set to ``--per-connection``), in one fresh memory. Then it
creates M notes with ``createNote`` over HTTP, one at a time with ``--gap-ms`` between a
response and the next request, so each note is its own fan-out to all N subscriptions.

Raw Redis, in the same run, after the server has stopped: N readers, each its own
connection doing ``XREAD BLOCK`` on one fresh stream of the same Redis, and a publisher
doing ``XADD`` of an envelope of the same shape as Fortemi's, with the same M and gap: the
same events delivered without GraphQL, WebSockets or Fortemi. It is a floor for this
client, not for Redis: one Python process handling N redis-py replies per event saturates
its core well before Redis does (watch its "client CPU %").

Publishing is closed-loop: the next event goes out ``--gap-ms`` after the previous publish
returned, so a server slowed by its fan-out also slows its publisher; "events/s published"
shows the rate each path actually ran at.

Latency per (event, subscription) is the wall clock when the message is read here minus
the event's ``at`` (set by the publisher just before the XADD; one machine, one clock),
nearest-rank percentiles. Subscriptions are known to be live only once an event reaches
them, so before measuring, probe events (``updateNote`` of one note; ``XADD`` of probe
entries for the baseline) go out every 250 ms until every subscription has seen one. Every
wait is bounded by ``--timeout``: a subscription that never becomes ready, ends early or
misses events is counted and shown, never waited for forever.

"server CPU" is the uvicorn process's user+system time over the measured phase (the M
createNote requests included), "Redis CPU" is Redis's own (``INFO cpu``) over that phase,
"client CPU %" is this process's share of the phase's wall time (all subscribers and the
publisher run here: near 100 means the client, not the server, sets the latency).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import math
import os
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.typing import Subprotocol

from benchmarks._client import Poster, RawPoster
from benchmarks._common import (
    ACTOR,
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
from fortemi.platform.embedded import ServiceUrls

__all__ = ["main"]

PROBE_EVERY = 0.25  # seconds between probe events while waiting for subscriptions
POLL = 0.02  # seconds between checks of a condition being waited for
PROTOCOL = Subprotocol("graphql-transport-ws")
_FEED = "subscription Feed { noteEvents { id type at memory entityType entityId payload } }"
_CREATE = "mutation Create($input: CreateNoteInput!) { createNote(input: $input) { id } }"
_PROBE = (
    "mutation Probe($id: ID!, $input: UpdateNoteInput!) "
    "{ updateNote(id: $id, input: $input) { id } }"
)


# -- what the subscriptions received --------------------------------------------------------


@dataclass
class Sink:
    """What one subscription received: measured events by key, with (read at, ``at``)."""

    seen: dict[str, tuple[float, str]] = field(default_factory=dict)
    ready: bool = False
    duplicates: int = 0
    ended: str | None = None  # why it stopped before the run did


class Fanout:
    """The sinks of N subscriptions, whatever carries the events to them."""

    def __init__(self, n: int) -> None:
        self.sinks = [Sink() for _ in range(n)]
        self.over = False  # once set, subscriptions end because the run did

    def probe(self, i: int) -> None:
        self.sinks[i].ready = True

    def deliver(self, i: int, key: str, read_at: float, at: str) -> None:
        sink = self.sinks[i]
        sink.ready = True
        if key in sink.seen:
            sink.duplicates += 1
        else:
            sink.seen[key] = (read_at, at)

    def end(self, i: int, why: str) -> None:
        if not self.over and self.sinks[i].ended is None:
            self.sinks[i].ended = why

    def all_ready(self) -> bool:
        return all(s.ready or s.ended is not None for s in self.sinks)

    def all_received(self, count: int) -> bool:
        return all(len(s.seen) >= count or s.ended is not None for s in self.sinks)


@dataclass
class Result:
    """One row: a fan-out path measured over the same N and M."""

    label: str
    connections: int
    sinks: list[Sink]
    keys: list[str]  # the measured events that were published
    publish_seconds: float
    wall: float
    client_cpu: float
    redis_cpu: float
    failure: str | None  # why publishing stopped early
    server_cpu: float | None = None

    def expected(self) -> int:
        return len(self.sinks) * len(self.keys)

    def received(self) -> int:
        wanted = set(self.keys)
        return sum(len(wanted.intersection(sink.seen)) for sink in self.sinks)

    def latencies(self) -> list[float]:
        wanted = set(self.keys)
        return [
            read_at - datetime.fromisoformat(at).timestamp()
            for sink in self.sinks
            for key, (read_at, at) in sink.seen.items()
            if key in wanted
        ]


async def _until(done: Callable[[], bool], within: float) -> bool:
    """Whether ``done()`` held within ``within`` seconds (polled)."""
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL)
    return True


async def _become_ready(fan: Fanout, probe: Callable[[], Awaitable[None]], within: float) -> None:
    """Probe events until every subscription has seen one, or ``within`` s have passed."""
    deadline = time.monotonic() + within
    while not fan.all_ready() and time.monotonic() < deadline:
        try:
            await asyncio.wait_for(probe(), within)
        except (TimeoutError, RuntimeError, OSError, EOFError, RedisError) as exc:
            raise RuntimeError(f"a probe event could not be published: {exc!r}") from exc
        await _until(fan.all_ready, min(PROBE_EVERY, max(0.0, deadline - time.monotonic())))


async def _measure(
    label: str,
    connections: int,
    fan: Fanout,
    publish: Callable[[int], Awaitable[str]],
    redis_cpu: Callable[[], Awaitable[float]],
    args: argparse.Namespace,
) -> Result:
    """Publish M events, ``--gap-ms`` apart, then wait (bounded) for them to arrive."""
    keys: list[str] = []
    failure = None
    redis_before, cpu, started = await redis_cpu(), time.process_time(), time.perf_counter()
    for i in range(args.events):
        try:
            keys.append(await asyncio.wait_for(publish(i), args.timeout))
        except (TimeoutError, RuntimeError, OSError, EOFError, RedisError) as exc:
            failure = f"event {i + 1} of {args.events} not published: {exc!r}"
            break
        await asyncio.sleep(args.gap_ms / 1000)
    published = time.perf_counter() - started
    await _until(lambda: fan.all_received(len(keys)), args.timeout)
    wall = time.perf_counter() - started
    client = time.process_time() - cpu
    redis_used = await redis_cpu() - redis_before
    return Result(label, connections, fan.sinks, keys, published, wall, client, redis_used, failure)


def _redis_cpu(client: redis.Redis) -> Callable[[], Awaitable[float]]:
    async def used() -> float:
        info: dict[str, Any] = await client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])

    return used


# -- Fortemi: noteEvents over graphql-transport-ws --------------------------------------------


async def _graphql(poster: Poster, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    status, content = await poster.post(
        json.dumps({"query": query, "variables": variables}).encode()
    )
    result: dict[str, Any] = json.loads(content)
    if status != 200 or result.get("errors"):
        raise RuntimeError(f"GraphQL call failed ({status}): {result}")
    data: dict[str, Any] = result["data"]
    return data


async def _open(url: str, init: dict[str, str], subs: range) -> ClientConnection:
    """One WebSocket, acknowledged, carrying the subscriptions numbered ``subs``."""
    ws = await connect(url, subprotocols=[PROTOCOL], compression=None, proxy=None)
    try:
        await ws.send(json.dumps({"type": "connection_init", "payload": init}))
        ack = json.loads(await ws.recv())
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"connection_init answered with {ack}")
        for i in subs:
            message = {"id": str(i), "type": "subscribe", "payload": {"query": _FEED}}
            await ws.send(json.dumps(message))
    except BaseException:
        await ws.close()
        raise
    return ws


async def _receive(ws: ClientConnection, fan: Fanout, subs: range, probe_id: str) -> None:
    """Reads one connection until it closes; the clock is read as each message is."""
    why = "connection closed"
    try:
        async for raw in ws:
            read_at = time.time()
            message = json.loads(raw)
            kind = message.get("type")
            if kind == "next":
                i, payload = int(message["id"]), message["payload"]
                event = (payload.get("data") or {}).get("noteEvents")
                if event is None:
                    fan.end(i, f"next without data: {payload}")
                elif event["type"] == "note.created" and event["entityId"] != probe_id:
                    fan.deliver(i, event["entityId"], read_at, event["at"])
                else:
                    fan.probe(i)
            elif kind == "ping":
                await ws.send('{"type":"pong"}')
            elif kind == "error":
                fan.end(int(message["id"]), f"error: {message.get('payload')}")
            elif kind == "complete":
                fan.end(int(message["id"]), "completed by the server")
    except ConnectionClosed as exc:
        why = f"connection closed: {exc}"
    finally:
        code = f" ({ws.close_code} {ws.close_reason!r})" if ws.close_code is not None else ""
        for i in subs:
            fan.end(i, why + code)


async def _fortemi(
    args: argparse.Namespace, server: ServerProcess, redis_url: str, token: str, memory: str
) -> Result:
    fan = Fanout(args.subscriptions)
    headers = {
        "authorization": f"Bearer {token}",
        "x-fortemi-memory": memory,
        "content-type": "application/json",
    }
    poster = await RawPoster.open(HOST, server.port, headers)
    notes = payloads(args.events + 1, args.seed)
    url = f"ws://{HOST}:{server.port}/graphql"
    init = {"authorization": f"Bearer {token}", "x-fortemi-memory": memory}
    connections: list[ClientConnection] = []
    readers: list[asyncio.Task[None]] = []
    try:
        # The probe note exists before any subscription, so its creation is never measured.
        created = await _graphql(poster, _CREATE, {"input": notes[0].graphql_input()})
        probe_id: str = created["createNote"]["id"]
        probes = 0

        async def probe() -> None:
            nonlocal probes
            probes += 1
            variables = {"id": probe_id, "input": {"metadata": {"probe": probes}}}
            await _graphql(poster, _PROBE, variables)

        async def publish(i: int) -> str:
            data = await _graphql(poster, _CREATE, {"input": notes[i + 1].graphql_input()})
            note_id: str = data["createNote"]["id"]
            return note_id

        opening = asyncio.Semaphore(32)  # handshakes in flight at once

        async def open_one(first: int) -> None:
            count = min(args.per_connection, args.subscriptions - first)
            subs = range(first, first + count)
            async with opening:
                try:
                    async with asyncio.timeout(args.timeout):
                        ws = await _open(url, init, subs)
                except (OSError, TimeoutError, RuntimeError, WebSocketException) as exc:
                    for i in subs:
                        fan.end(i, f"not connected: {exc!r}")
                    return
            connections.append(ws)
            readers.append(asyncio.create_task(_receive(ws, fan, subs, probe_id)))

        await asyncio.gather(
            *(open_one(first) for first in range(0, args.subscriptions, args.per_connection))
        )
        await _become_ready(fan, probe, args.timeout)
        async with redis.Redis.from_url(redis_url) as broker:
            server_cpu = server.cpu_seconds()
            planned = math.ceil(args.subscriptions / args.per_connection)
            result = await _measure(
                "Fortemi noteEvents", planned, fan, publish, _redis_cpu(broker), args
            )
            result.server_cpu = server.cpu_seconds() - server_cpu
    finally:
        fan.over = True
        for ws in connections:
            await ws.close()
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        await poster.aclose()
    return result


# -- the floor: raw Redis Streams, one XREAD BLOCK per reader -------------------------------


def _envelope(kind: str, memory: str) -> str:
    """An envelope shaped like Fortemi's event, ``at`` taken now, as the server does."""
    body = {
        "type": kind,
        "entity_type": "note",
        "entity_id": "Tm90ZTo" + uuid.uuid4().hex,  # "Note:" in base64, as a global id
        "memory": memory,
        "actor": ACTOR,
        "correlation_id": uuid.uuid4().hex,
        "payload": {"version": 1, "project": None, "skill": None},
        "at": datetime.now(UTC).isoformat(),
        "version": 1,
    }
    return json.dumps(body, separators=(",", ":"))


async def _raw(args: argparse.Namespace, url: str, memory: str) -> Result:
    n = args.subscriptions
    fan = Fanout(n)
    stream = f"bench:fanout:{memory}"
    # A blocked XREAD holds its connection: one per reader.
    readers_client = redis.Redis.from_url(url, max_connections=n)
    publisher = redis.Redis.from_url(url)
    tasks: list[asyncio.Task[None]] = []
    try:
        # Readers start after this entry, so none misses an event for starting late.
        start: Any = await publisher.xadd(stream, {"e": _envelope("start", memory)})

        async def read(i: int) -> None:
            position = start
            try:
                while True:
                    reply: Any = await readers_client.xread({stream: position}, block=1000)
                    read_at = time.time()
                    for _, entries in reply or ():
                        for entry_id, fields in entries:
                            position = entry_id
                            event = json.loads(fields[b"e"])
                            if event["type"] == "note.created":
                                fan.deliver(i, entry_id.decode(), read_at, event["at"])
                            else:
                                fan.probe(i)
            except RedisError as exc:
                fan.end(i, f"redis: {exc!r}")

        async def probe() -> None:
            await publisher.xadd(stream, {"e": _envelope("probe", memory)})

        async def publish(_: int) -> str:
            entry_id: Any = await publisher.xadd(stream, {"e": _envelope("note.created", memory)})
            return str(entry_id.decode())

        tasks = [asyncio.create_task(read(i)) for i in range(n)]
        await _become_ready(fan, probe, args.timeout)
        result = await _measure("raw Redis XREAD", n, fan, publish, _redis_cpu(publisher), args)
    finally:
        fan.over = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(RedisError):
            await publisher.delete(stream)
        await readers_client.aclose()
        await publisher.aclose()
    return result


# -- report ---------------------------------------------------------------------------------


def _delivery_row(r: Result) -> list[str]:
    expected, received = r.expected(), r.received()
    return [
        r.label,
        str(len(r.sinks)),
        str(r.connections),
        str(sum(sink.ready for sink in r.sinks)),
        str(len(r.keys)),
        str(expected),
        str(received),
        str(expected - received),
        str(sum(sink.duplicates for sink in r.sinks)),
        str(sum(sink.ended is not None for sink in r.sinks)),
    ]


def _latency_row(r: Result) -> list[str]:
    samples = r.latencies()
    events = max(1, len(r.keys))
    cpu = "-" if r.server_cpu is None else f"{1000 * r.server_cpu / events:.2f}"
    figures = ["-"] * 5
    if samples:
        lat = Latency.of(samples)
        figures = [ms(lat.p50), ms(lat.p95), ms(lat.p99), ms(max(samples)), ms(lat.mean)]
    return [
        r.label,
        *figures,
        f"{len(r.keys) / r.publish_seconds:.1f}" if r.publish_seconds > 0 else "-",
        cpu,
        f"{1000 * r.redis_cpu / events:.2f}",
        f"{100 * r.client_cpu / r.wall:.0f}" if r.wall > 0 else "-",
    ]


def _notes(r: Result, shown: int = 3) -> list[str]:
    """Why a row falls short: publishing stopped, or subscriptions ended (commonest first)."""
    lines = [f"{r.label}: publishing stopped: {r.failure}"] if r.failure else []
    reasons = Counter(sink.ended for sink in r.sinks if sink.ended is not None)
    if reasons:
        lines.append(f"{r.label}: {reasons.total()} subscription(s) ended early:")
        ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        lines += [f"  {count} x {why[:300]}" for why, count in ranked[:shown]]
        if len(ranked) > shown:
            lines.append(f"  ... and {len(ranked) - shown} other reason(s)")
    return lines


def _report(results: Sequence[Result], events: int) -> None:
    headers = [
        "path",
        "subscriptions",
        "connections",
        "ready",
        "events",
        "expected",
        "received",
        "missing",
        "duplicates",
        "ended early",
    ]
    print(table(headers, [_delivery_row(r) for r in results], "lrrrrrrrrr"))
    print()
    headers = [
        "path",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "mean ms",
        "events/s published",
        "server CPU ms/event",
        "Redis CPU ms/event",
        "client CPU %",
    ]
    print(table(headers, [_latency_row(r) for r in results], "lrrrrrrrrr"))
    print()
    fortemi, raw = (r.latencies() for r in results)
    ratio = "-"
    if fortemi and raw:
        ratio = f"{Latency.of(fortemi).p95 / Latency.of(raw).p95:.1f}x"
    # A path that lost deliveries or publishes is measured over fewer, cheaper deliveries.
    short = [
        f"{r.label} got {r.received()} of {r.expected()} deliveries"
        for r in results
        if r.received() < r.expected() or r.failure is not None or len(r.keys) < events
    ]
    verdict = "NOT comparable: " + "; ".join(short) if short else "comparable: nothing lost"
    rows = [["p95, Fortemi / raw Redis", ratio, verdict]]
    print(table(["comparison", "ratio", "validity"], rows, "lrl"))
    notes = [line for r in results for line in _notes(r)]
    print()
    print("\n".join(notes) if notes else "every subscription stayed open to the end", flush=True)


# -- setup and entry point ------------------------------------------------------------------


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    port, token, db, memories = stage.port, stage.token, stage.db, stage.memories
    memory = await stage.open_memory()
    # The child inherits this: the server must accept --per-connection subscriptions per socket.
    os.environ["FORTEMI_WS_MAX_SUBSCRIPTIONS"] = str(args.per_connection)
    server = ServerProcess(
        "fortemi", port=port, home=home, urls=urls, loop=args.loop, http=args.http
    )
    _, loop_name = client_loop_factory()
    connections = math.ceil(args.subscriptions / args.per_connection)
    versions = ", ".join(
        f"{name} {importlib.metadata.version(name)}" for name in ("websockets", "redis")
    )
    setup += [
        (
            "server",
            f"uvicorn, 1 worker in a subprocess, loop {args.loop}, http {args.http}, "
            f"access log off, log level warning, ws_max_subscriptions {args.per_connection}",
        ),
        (
            "client",
            f"one process, loop {loop_name}, {versions}: {connections} WebSocket(s) "
            f"(graphql-transport-ws, permessage-deflate off), createNote over 1 raw "
            f"HTTP/1.1 keep-alive connection; baseline: {args.subscriptions} redis.asyncio "
            "connections, XREAD BLOCK, 1 publisher connection",
        ),
        (
            "workload",
            f"N={args.subscriptions} subscriptions, {args.per_connection} per connection; "
            f"M={args.events} events, one at a time, {args.gap_ms:g} ms gap; probe events "
            f"every {PROBE_EVERY * 1000:g} ms until all are live; timeout {args.timeout:g} s "
            f"per wait; seed {args.seed}",
        ),
        ("memory", f"{memory}, fresh, dropped at the end; baseline stream bench:fanout:{memory}"),
    ]
    print_setup(
        f"benchmarks.events: noteEvents fan-out to {args.subscriptions} subscriptions vs "
        "raw Redis XREAD",
        setup,
    )
    try:
        async with serving(server):
            fortemi = await _fortemi(args, server, urls.redis, token, memory)
        raw = await _raw(args, urls.redis, memory)
        _report([fortemi, raw], args.events)
    finally:
        await memories.delete(memory, confirm=memory)
        await db.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.events", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--subscriptions", type=int, default=1000, help="N (default 1000)")
    parser.add_argument(
        "--per-connection", type=int, default=20, help="subscriptions per WebSocket (default 20)"
    )
    parser.add_argument("--events", type=int, default=200, help="M (default 200)")
    parser.add_argument(
        "--gap-ms", type=float, default=20.0, help="between one publish and the next (default 20)"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="bound on every wait, in s (default 120)"
    )
    parser.add_argument("--seed", type=int, default=1, help="RNG seed for the notes")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    server_options(parser)
    args = parser.parse_args(argv)
    if min(args.subscriptions, args.per_connection, args.events) < 1 or args.timeout <= 0:
        parser.error("--subscriptions, --per-connection, --events and --timeout must be positive")
    if args.gap_ms < 0:
        parser.error("--gap-ms must not be negative")
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
