"""createNote and note(id) latency through HTTP GraphQL, next to the same work in raw SQL.

``python -m benchmarks.crud [--notes N] [--home DIR]``

One fresh memory; N notes are created through ``createNote`` (HTTP POST /graphql with a
bearer token, one request at a time over one keep-alive connection) and N through raw
asyncpg (BEGIN + ``SET LOCAL search_path``, one INSERT into ``note``, ``note_original``
and ``note_version``, COMMIT: the least the service must do). Then N notes, drawn from
all of those, are read through ``note(id)`` and through a primary-key SELECT. The two
paths run in alternating blocks (``--block``), so both see the same table sizes, the
same caches and the same background work (autovacuum, checkpoints).

Why a separate server process: the client shares the machine with the server, and a
client in the same process and event loop would take its CPU time from the server's
request handling and inflate every GraphQL figure. So uvicorn runs in a subprocess
(``benchmarks._server``, one worker, access log off), configured as ``fortemi serve``
runs it, and only the load generator runs here, on uvloop when installed, with the raw
HTTP/1.1 client of :mod:`benchmarks._client` (httpx adds its own CPU time to every
request; ``--client httpx`` shows how much). PostgreSQL (the embedded one by default)
runs on the same machine for both paths.

Latencies are from just before the request (or the first statement) to the last byte of
the response (or COMMIT), in ms, nearest-rank percentiles. Throughput is ops over the
wall time of that path's blocks, client bookkeeping included. "server CPU/op" is the
uvicorn process's user+system CPU over its blocks, per op: the Python work per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from benchmarks._client import Poster, describe, open_posters
from benchmarks._common import (
    ACTOR,
    HOST,
    Latency,
    ServerProcess,
    Stage,
    backing_services,
    bench_home,
    client_loop_factory,
    client_option,
    common_setup,
    ms,
    print_setup,
    server_options,
    serving,
    table,
)
from benchmarks._notes import Payload, SqlNotes, payloads
from fortemi.platform.database import memory_schema
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import parse_note_id, to_global_id

__all__ = ["main"]

SEED_TARGET_MS = 100.0
GOAL_MS = 10.0

_CREATE = (
    "mutation Create($input: CreateNoteInput!) { createNote(input: $input) "
    "{ id version createdAt } }"
)
_READ = (
    "query Read($id: ID!) { note(id: $id) "
    "{ id title content format tags metadata version createdAt updatedAt } }"
)


@dataclass
class Samples:
    """The samples of one (operation, path) row."""

    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0
    server_cpu: float | None = None


class GraphQLClient:
    def __init__(self, poster: Poster) -> None:
        self._poster = poster

    async def post(self, body: bytes) -> tuple[float, dict[str, Any]]:
        """One timed POST; the body is decoded and checked after the clock stops."""
        started = time.perf_counter()
        status, content = await self._poster.post(body)
        elapsed = time.perf_counter() - started
        result: dict[str, Any] = json.loads(content)
        if status != 200 or result.get("errors"):
            raise RuntimeError(f"GraphQL call failed ({status}): {result}")
        return elapsed, result


def _create_body(note: Payload) -> bytes:
    return json.dumps({"query": _CREATE, "variables": {"input": note.graphql_input()}}).encode()


def _read_body(note_id: UUID) -> bytes:
    return json.dumps({"query": _READ, "variables": {"id": to_global_id("Note", note_id)}}).encode()


class Run:
    """The benchmark over one memory, one server and one SQL connection."""

    def __init__(self, gql: GraphQLClient, sql: SqlNotes, server: ServerProcess) -> None:
        self.gql, self.sql, self.server = gql, sql, server

    async def gql_creates(self, notes: Sequence[Payload], into: Samples | None) -> list[UUID]:
        ids, started, cpu = [], time.perf_counter(), self.server.cpu_seconds()
        for note in notes:
            elapsed, result = await self.gql.post(_create_body(note))
            ids.append(parse_note_id(result["data"]["createNote"]["id"]))
            if into is not None:
                into.latencies.append(elapsed)
        self._account(into, started, cpu)
        return ids

    async def sql_creates(self, notes: Sequence[Payload], into: Samples | None) -> list[UUID]:
        ids, started = [], time.perf_counter()
        for note in notes:
            began = time.perf_counter()
            ids.append(await self.sql.create(note, ACTOR))
            elapsed = time.perf_counter() - began
            if into is not None:
                into.latencies.append(elapsed)
        self._account(into, started, None)
        return ids

    async def gql_reads(self, ids: Sequence[UUID], into: Samples | None) -> None:
        started, cpu = time.perf_counter(), self.server.cpu_seconds()
        for note_id in ids:
            elapsed, result = await self.gql.post(_read_body(note_id))
            if result["data"]["note"] is None:
                raise RuntimeError(f"note {note_id} not found through GraphQL")
            if into is not None:
                into.latencies.append(elapsed)
        self._account(into, started, cpu)

    async def sql_reads(
        self, ids: Sequence[UUID], into: Samples | None, *, in_transaction: bool
    ) -> None:
        read = self.sql.get_in_transaction if in_transaction else self.sql.get
        started = time.perf_counter()
        for note_id in ids:
            began = time.perf_counter()
            row = await read(note_id)
            elapsed = time.perf_counter() - began
            if row is None:
                raise RuntimeError(f"note {note_id} not found through SQL")
            if into is not None:
                into.latencies.append(elapsed)
        self._account(into, started, None)

    def _account(self, into: Samples | None, started: float, cpu: float | None) -> None:
        if into is None:
            return
        into.wall += time.perf_counter() - started
        if cpu is not None:
            into.server_cpu = (into.server_cpu or 0.0) + self.server.cpu_seconds() - cpu


def _blocks(count: int, size: int) -> list[slice]:
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


def _row(operation: str, path: str, p: Samples) -> list[str]:
    lat = Latency.of(p.latencies)
    cpu = "-" if p.server_cpu is None else f"{p.server_cpu / lat.count * 1000:.2f}"
    ops = f"{lat.count / p.wall:.0f}"
    return [
        operation,
        path,
        str(lat.count),
        ms(lat.p50),
        ms(lat.p95),
        ms(lat.p99),
        ms(lat.mean),
        ops,
        cpu,
    ]


def _ratio(graphql: Samples, sql: Samples) -> list[str]:
    g, s = Latency.of(graphql.latencies), Latency.of(sql.latencies)
    cells = [
        f"{a / b:.1f}x"
        for a, b in ((g.p50, s.p50), (g.p95, s.p95), (g.p99, s.p99), (g.mean, s.mean))
    ]
    return ["", "ratio GraphQL/SQL", "", *cells, "", ""]


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    port, token, db, memories = stage.port, stage.token, stage.db, stage.memories
    memory = await stage.open_memory()
    server = ServerProcess(
        "fortemi", port=port, home=home, urls=urls, loop=args.loop, http=args.http
    )
    _, loop_name = client_loop_factory()
    setup += [
        (
            "server",
            f"uvicorn, 1 worker in a subprocess, loop {args.loop}, http {args.http}, "
            "access log off, log level warning",
        ),
        (
            "client",
            f"{describe(args.client)}, 1 keep-alive connection, sequential, loop {loop_name}; "
            "SQL: 1 asyncpg connection; both in the main process",
        ),
        (
            "workload",
            f"N={args.notes} creates + N reads per path, warm-up {args.warmup} per path, "
            f"blocks of {args.block} alternating GraphQL/SQL, seed {args.seed}, concurrency 1",
        ),
        ("memory", f"{memory}, fresh; ends with 2N + 2 x warm-up notes"),
    ]
    try:
        sql = await SqlNotes.connect(urls.database, memory_schema(memory))
        try:
            async with serving(server):
                headers = {"authorization": f"Bearer {token}", "x-fortemi-memory": memory}
                [poster] = await open_posters(args.client, HOST, server.port, headers, 1)
                try:
                    print_setup("benchmarks.crud: createNote and note(id), GraphQL vs SQL", setup)
                    await _measure(args, Run(GraphQLClient(poster), sql, server))
                finally:
                    await poster.aclose()
        finally:
            await sql.close()
    finally:
        await memories.delete(memory, confirm=memory)
        await db.close()


async def _measure(args: argparse.Namespace, run: Run) -> None:
    n, warm = args.notes, args.warmup
    gql_notes = payloads(warm + n, args.seed)
    sql_notes = payloads(warm + n, args.seed)  # the same notes, so both paths store the same
    rng = random.Random(args.seed)

    warm_ids = await run.gql_creates(gql_notes[:warm], None)
    warm_ids += await run.sql_creates(sql_notes[:warm], None)
    rng.shuffle(warm_ids)
    await run.gql_reads(warm_ids[:warm], None)
    await run.sql_reads(warm_ids[:warm], None, in_transaction=False)
    await run.sql_reads(warm_ids[:warm], None, in_transaction=True)

    create_gql, create_sql = Samples(), Samples()
    created: list[UUID] = []
    gql_notes, sql_notes = gql_notes[warm:], sql_notes[warm:]
    for block in _blocks(n, args.block):
        created += await run.gql_creates(gql_notes[block], create_gql)
        created += await run.sql_creates(sql_notes[block], create_sql)

    read_ids = rng.sample(created, k=n)
    read_gql, read_sql, read_txn = Samples(), Samples(), Samples()
    for block in _blocks(n, args.block):
        await run.gql_reads(read_ids[block], read_gql)
        await run.sql_reads(read_ids[block], read_sql, in_transaction=False)
        await run.sql_reads(read_ids[block], read_txn, in_transaction=True)

    headers = [
        "operation",
        "path",
        "n",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "mean ms",
        "ops/s",
        "server CPU ms/op",
    ]
    rows = [
        _row("createNote", "GraphQL over HTTP", create_gql),
        _row("createNote", "SQL: txn + SET LOCAL, INSERT x3", create_sql),
        _ratio(create_gql, create_sql),
        _row("note(id)", "GraphQL over HTTP", read_gql),
        _row("note(id)", "SQL: SELECT by id", read_sql),
        _ratio(read_gql, read_sql),
        _row("note(id)", "SQL: txn + SET LOCAL, SELECT", read_txn),
    ]
    print(table(headers, rows, "llrrrrrrr"))
    print()
    target_rows = []
    for operation, p in (("createNote", create_gql), ("note(id)", read_gql)):
        p95 = Latency.of(p.latencies).p95 * 1000
        for name, limit in (("seed", SEED_TARGET_MS), ("goal", GOAL_MS)):
            met = "met" if p95 < limit else "NOT met"
            target_rows.append(
                [f"{name}: GraphQL p95 < {limit:g} ms", operation, f"{p95:.2f}", met]
            )
    print(table(["target", "operation", "p95 ms", "result"], target_rows, "llrl"), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.crud", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--notes", type=int, default=10_000, help="N (default 10000)")
    parser.add_argument("--warmup", type=int, default=200, help="uncounted ops per path")
    parser.add_argument("--block", type=int, default=250, help="ops per alternating block")
    parser.add_argument("--seed", type=int, default=1, help="RNG seed for notes and read order")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    client_option(parser)
    server_options(parser)
    args = parser.parse_args(argv)
    if args.notes < 1 or args.warmup < 1 or args.block < 1:
        parser.error("--notes, --warmup and --block must be positive")
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
