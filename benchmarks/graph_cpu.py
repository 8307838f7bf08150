"""The server's CPU per ``graph(depth 3, maxNodes 200)`` request, in process.

``python -m benchmarks.graph_cpu [--notes 10000] [--links 100000] [--scifact DIR]
[--starts 200] [--warmup 10] [--runs 1] [--profile FILE]``

Wall-clock latency on a shared machine moves with the other processes' load more than with
the code; CPU time moves far less. This runs the real app (a
:class:`~fortemi.runtime.Runtime` and :func:`~fortemi.app.create_app`, the heap settled as
``fortemi serve`` settles it) in the benchmark's own process through
``httpx.ASGITransport``, one request at a time, and reads ``time.process_time()`` around
each. The figure therefore includes the in-process client's share (building the request,
reading the response: about 1 ms) and the CPU of anything the request starts meanwhile
(its audit write), but no socket or HTTP parsing. The data is
:func:`benchmarks.graph.synthetic`'s memory, or with ``--scifact`` :mod:`benchmarks.graph`'s
SciFact one, loaded by COPY; the query selects every field.
With ``--profile``, cProfile (CPU-time clock) records the measured requests only, into
FILE, for ``python -m pstats FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from benchmarks._common import Stage, backing_services, bench_home, common_setup, print_setup
from benchmarks.graph import _GRAPH, load, scifact, synthetic
from fortemi.app import create_app, settle_heap
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import to_global_id
from fortemi.runtime import Runtime

__all__ = ["main"]


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    memory = await stage.open_memory()
    corpus = (
        synthetic(args.notes, args.links, args.seed)
        if args.scifact is None
        else scifact(Path(args.scifact))
    )
    ids = await load(stage.db, memory, corpus, args.seed)
    await stage.db.close()
    print_setup(
        "benchmarks.graph_cpu: server CPU per graph request, in process",
        [
            *setup,
            ("data", f"{corpus.name}, {len(corpus.links):,} link rows"),
            (
                "workload",
                f"{args.starts} random starts after {args.warmup}, depth 3, "
                f"maxNodes 200, every field, {args.runs} run(s)",
            ),
        ],
    )
    runtime = await Runtime.open(stage.settings, urls)
    profile = cProfile.Profile(time.process_time) if args.profile else None
    try:
        app = create_app(runtime)
        settle_heap()  # as ``fortemi serve`` does
        headers = {"authorization": f"Bearer {stage.token}", "x-fortemi-memory": memory}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", headers=headers
        ) as client:
            for run in range(1, args.runs + 1):
                starts = random.Random(args.seed + run).sample(ids, args.starts + args.warmup)
                cpu: list[float] = []
                wall: list[float] = []
                for i, start in enumerate(starts):
                    body = {"query": _GRAPH, "variables": {"id": to_global_id("Note", start)}}
                    measured = i >= args.warmup
                    if measured and profile is not None:
                        profile.enable()
                    began, began_wall = time.process_time(), time.perf_counter()
                    response = await client.post("/graphql", json=body)
                    spent, spent_wall = (
                        time.process_time() - began,
                        time.perf_counter() - began_wall,
                    )
                    if measured and profile is not None:
                        profile.disable()
                    if response.status_code != 200 or "errors" in response.json():
                        raise RuntimeError(f"graph failed: {response.text[:500]}")
                    if measured:
                        cpu.append(spent * 1000)
                        wall.append(spent_wall * 1000)
                print(
                    f"run {run}: CPU per request mean {statistics.mean(cpu):.1f} ms, "
                    f"p50 {statistics.median(cpu):.1f} ms; in-process wall p50 "
                    f"{statistics.median(wall):.1f} ms, p95 "
                    f"{statistics.quantiles(wall, n=20)[18]:.1f} ms",
                    flush=True,
                )
    finally:
        await runtime.close()
        if profile is not None:
            profile.dump_stats(args.profile)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.graph_cpu", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--notes", type=int, default=10_000, help="synthetic notes")
    parser.add_argument("--links", type=int, default=100_000, help="synthetic link rows")
    parser.add_argument("--scifact", help="SciFact's BEIR folder: its abstracts instead")
    parser.add_argument("--starts", type=int, default=200, help="measured start notes")
    parser.add_argument("--warmup", type=int, default=10, help="uncounted starts")
    parser.add_argument("--runs", type=int, default=1, help="measured runs, each new starts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", help="write a cProfile of the measured requests here")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    if args.notes < 10 or args.links < args.notes or args.starts < 2:
        parser.error("--notes >= 10, --links >= --notes, --starts >= 2")
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        asyncio.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
