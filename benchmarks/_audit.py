"""The cost of the audit write per request: AuditWriter next to a plain INSERT.

``python -m benchmarks._audit [--requests N] [--decisions K] [--concurrency C ...]``

A "request" writes K decision records and waits until they are durable, the way the
enforcement point does before it answers. Two paths, in alternating rounds over the same
pool and the same PostgreSQL:

* **AuditWriter**: ``record()`` through the real writer: records validated, chained
  (blake3 per record), group-committed with the segment head in one statement.
* **plain INSERT**: the same records into a table with the same columns and the same
  auditor indexes but no chain (no seq, no hashes, no head), one autocommitted
  single-row INSERT per request (``executemany`` of it when K > 1), on a pooled connection.

Latency is from before the call to its return, in microseconds, nearest-rank
percentiles; rows/s is rows over the wall time of that path's rounds. ``audit_write_cost``
is the reusable part (another script can print its figures); run standalone, this module
starts the embedded services (or uses DATABASE_URL), makes a scratch database, migrates
it, measures, verifies the chain it wrote and drops the database.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from benchmarks._common import (
    Latency,
    backing_services,
    bench_home,
    client_loop_factory,
    common_setup,
    print_setup,
    table,
)
from fortemi.auth.audit import AuditEntry, AuditKeyring, AuditRecord, AuditWriter, verify
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.migrations import Migrations

__all__ = ["audit_write_cost", "main"]

ROUNDS = 4
POOL_SIZE = 10  # Database.connect's default, as the server runs it

# One key for every writer of a run, so the check at the end verifies all their segments.
_KEYRING = AuditKeyring(secrets.token_bytes(32))
_PLAIN_TABLE = "public.bench_audit_plain"
_CREATE_PLAIN = f"""
CREATE TABLE {_PLAIN_TABLE} (
    id bigserial PRIMARY KEY, at timestamptz NOT NULL, user_id text NOT NULL,
    groups text[] NOT NULL, resource_type text NOT NULL, resource_name text, memory text,
    action text NOT NULL, decision text NOT NULL CHECK (decision IN ('allow', 'deny')),
    reason text NOT NULL, policy_version text NOT NULL, trace_id text, client_addr text,
    job_id text, details jsonb NOT NULL DEFAULT '{{}}'
);
CREATE INDEX ON {_PLAIN_TABLE} (at);
CREATE INDEX ON {_PLAIN_TABLE} (user_id, at);
CREATE INDEX ON {_PLAIN_TABLE} (resource_type, resource_name, at);
CREATE INDEX ON {_PLAIN_TABLE} (decision, at);
"""
_INSERT_PLAIN = f"""
INSERT INTO {_PLAIN_TABLE} (at, user_id, groups, resource_type, resource_name, memory,
    action, decision, reason, policy_version, trace_id, client_addr, job_id, details)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb)
"""  # noqa: S608 - a constant table name


def _records(request: int, count: int) -> list[AuditRecord]:
    """What one GraphQL request's decisions look like (a note read: memory + project)."""
    now = datetime.now(UTC)
    return [
        AuditRecord(
            at=now,
            user_id=f"user-{request % 97}",
            groups=("engineering", "project-poimen"),
            resource_type="project",
            resource_name=f"project-{request % 13}",
            memory="main",
            action="read",
            decision="allow" if request % 10 else "deny",
            reason="in_allowed_group" if request % 10 else "not_in_allowed_groups",
            policy_version="sha256:0f4c2a9e1b7d",
            trace_id=f"{request:032x}",
            client_addr="10.0.0.7",
            details={"checker": "access_level", "index": i},
        )
        for i in range(count)
    ]


async def _run(
    requests: int, concurrency: int, one: Callable[[int], Awaitable[None]]
) -> tuple[list[float], float]:
    """``requests`` calls of ``one`` by ``concurrency`` workers; (latencies s, wall s)."""
    latencies: list[float] = []
    counter = iter(range(requests))

    async def worker() -> None:
        for request in counter:
            started = time.perf_counter()
            await one(request)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


async def audit_write_cost(
    db: Database, *, requests: int, decisions_per_request: int, concurrency: int
) -> dict[str, float]:
    """Per-request audit write latency (µs) and rows/s, AuditWriter vs a plain INSERT.

    Appends ``requests x decisions_per_request`` rows (plus a warm-up) to ``db``'s audit
    log under a fresh ``bench-*`` segment, so point it at a scratch database. Creates and
    drops ``public.bench_audit_plain`` for the baseline. Keys: ``{audit,plain}_{p50,p99,
    mean}_us``, ``{audit,plain}_rows_per_s``, ``audit_rows_per_batch``, ``requests``,
    ``decisions_per_request``, ``concurrency``.
    """
    if min(requests, decisions_per_request, concurrency) < 1:
        raise ValueError("requests, decisions_per_request and concurrency must be positive")
    k = decisions_per_request
    batches: list[int] = []

    async def committed(entries: Sequence[AuditEntry]) -> None:
        batches.append(len(entries))

    async def plain(request: int) -> None:
        rows = [
            (r.at, r.user_id, list(r.groups), r.resource_type, r.resource_name, r.memory,
             r.action, r.decision, r.reason, r.policy_version, r.trace_id, r.client_addr,
             r.job_id, r.details)
            for r in _records(request, k)
        ]  # fmt: skip
        async with db.connection() as conn:
            if k == 1:
                await conn.execute(_INSERT_PLAIN, *rows[0])
            else:
                await conn.executemany(_INSERT_PLAIN, rows)

    async with db.connection() as conn:
        await conn.execute(f"DROP TABLE IF EXISTS {_PLAIN_TABLE}; {_CREATE_PLAIN}")
    writer = AuditWriter(
        db, keyring=_KEYRING, segment=f"bench-{secrets.token_hex(6)}", on_committed=committed
    )
    await writer.start()
    try:

        async def audited(request: int) -> None:
            await writer.record(_records(request, k))

        warmup = max(concurrency, min(200, requests // 10))
        await _run(warmup, concurrency, audited)
        await _run(warmup, concurrency, plain)
        batches.clear()
        samples: dict[str, tuple[list[float], float]] = {"audit": ([], 0.0), "plain": ([], 0.0)}
        per_round = math.ceil(requests / ROUNDS)
        for start in range(0, requests, per_round):
            n = min(per_round, requests - start)
            for name, path in (("audit", audited), ("plain", plain)):
                latencies, wall = await _run(n, concurrency, path)
                samples[name] = (samples[name][0] + latencies, samples[name][1] + wall)
    finally:
        await writer.close()
        async with db.connection() as conn:
            await conn.execute(f"DROP TABLE IF EXISTS {_PLAIN_TABLE}")

    result: dict[str, float] = {
        "requests": float(requests),
        "decisions_per_request": float(k),
        "concurrency": float(concurrency),
        "audit_rows_per_batch": sum(batches) / len(batches) if batches else 0.0,
    }
    for name, (latencies, wall) in samples.items():
        figures = Latency.of(latencies)
        result[f"{name}_p50_us"] = figures.p50 * 1e6
        result[f"{name}_p99_us"] = figures.p99 * 1e6
        result[f"{name}_mean_us"] = figures.mean * 1e6
        result[f"{name}_rows_per_s"] = len(latencies) * k / wall
    return result


# -- standalone ---------------------------------------------------------------------------


def _row(figures: dict[str, float], path: str, label: str) -> list[str]:
    return [
        f"{figures['concurrency']:.0f}",
        label,
        f"{figures[f'{path}_p50_us']:.0f}",
        f"{figures[f'{path}_p99_us']:.0f}",
        f"{figures[f'{path}_mean_us']:.0f}",
        f"{figures[f'{path}_rows_per_s']:.0f}",
        f"{figures['audit_rows_per_batch']:.1f}" if path == "audit" else "-",
    ]


async def _main(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    dsn = urls.database
    scratch = f"bench_audit_{secrets.token_hex(4)}"
    admin = await Database.connect(dsn, min_size=1, max_size=1)
    try:
        async with admin.connection() as conn:
            await conn.execute(f'CREATE DATABASE "{scratch}"')
        db = await Database.connect(_with_path(dsn, scratch), max_size=POOL_SIZE)
        try:
            await Migrations().migrate_shared(db)
            _, loop = client_loop_factory()
            setup += [
                ("database", f"scratch database {scratch}, migrated, dropped afterwards"),
                ("pool", f"asyncpg pool of {POOL_SIZE} connections shared by both paths"),
                ("process", f"one process, event loop {loop}, client and writer together"),
                (
                    "workload",
                    f"{args.requests} requests x {args.decisions} decisions per path and "
                    f"concurrency, {ROUNDS} alternating rounds, warm-up uncounted",
                ),
            ]
            print_setup("benchmarks._audit: the cost of the audit write per request", setup)
            rows: list[list[str]] = []
            summary: list[str] = []
            for concurrency in args.concurrency:
                f = await audit_write_cost(
                    db,
                    requests=args.requests,
                    decisions_per_request=args.decisions,
                    concurrency=concurrency,
                )
                rows += [_row(f, "audit", "AuditWriter"), _row(f, "plain", "plain INSERT")]
                summary.append(
                    f"concurrency {concurrency}: the audit write costs {f['audit_p50_us']:.0f} "
                    f"us per request at p50 ({f['audit_p99_us']:.0f} us p99); a plain INSERT "
                    f"{f['plain_p50_us']:.0f} us ({f['plain_p99_us']:.0f} us p99)"
                )
            headers = ["conc.", "path", "p50 us", "p99 us", "mean us", "rows/s", "rows/batch"]
            print(table(headers, rows, "llrrrrr"))
            print()
            print("\n".join(summary))
            checked = await verify(db, _KEYRING)
            state = "intact" if checked.ok else f"BROKEN: {checked.problem}"
            print(f"chain check after the run: {state} ({checked.checked} rows re-hashed)")
        finally:
            await db.close()
    finally:
        async with admin.connection() as conn:
            await conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
        await admin.close()


def _with_path(dsn: str, database: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{database}"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks._audit", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--requests", type=int, default=4000, help="per path and concurrency")
    parser.add_argument("--decisions", type=int, default=2, help="records per request")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 16, 64], help="concurrent requests"
    )
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.decisions < 1 or min(args.concurrency) < 1:
        parser.error("--requests, --decisions and --concurrency must be positive")
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_main(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
