"""What the fast lexical paths cost each write: a note's insert with and without their
structures, in the same run.

``python -m benchmarks.lexical_writes [--notes 8000] [--block 250] [--warmup 200]
[--home DIR] [--seed N]``

Two fresh memories. In one, the structures the segment and pruned paths add to every
write are dropped after it is made: the impact-ordered postings index (memory migration
0013), and the ``xid`` index on ``lex_doc`` with the statement trigger that leaves
tombstones in ``lex_gone`` (0014; the ``xid`` column itself stays, a default with no index
costs next to nothing). Then ``--notes`` notes go in through the raw path of
``benchmarks.crud`` (BEGIN + ``SET LOCAL search_path``, one statement inserting the note,
its original and its first version, COMMIT; the note triggers fill the lexical index as
for any write), in alternating blocks of ``--block`` per memory, so both see the same
machine. The GraphQL ``createNote`` a user sends does this and much more (``benchmarks.crud``
measures it): the difference here is all the fast paths add to it.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import asyncpg

from benchmarks._common import (
    Latency,
    Stage,
    backing_services,
    bench_home,
    common_setup,
    ms,
    print_setup,
    table,
)
from benchmarks._notes import SqlNotes, payloads
from fortemi.platform.database import memory_schema
from fortemi.platform.embedded import ServiceUrls

__all__ = ["main"]

# Ours, constant: the structures of memory migrations 0013 and 0014 on the write path.
_DROP = (
    "DROP INDEX lex_posting_impact_idx",
    "DROP INDEX lex_doc_xid_idx",
    "DROP TRIGGER lex_doc_gone ON lex_doc",
)
_ACTOR = "bench"


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    with_paths, without = await stage.open_memory(), await stage.open_memory()
    conn = await asyncpg.connect(urls.database)
    try:
        await conn.execute(f"SET search_path TO {memory_schema(without)}, public")
        for statement in _DROP:
            await conn.execute(statement)
    finally:
        await conn.close()
    print_setup(
        "benchmarks.lexical_writes: a note insert with and without the fast lexical paths",
        [
            *setup,
            (
                "workload",
                f"{args.notes} raw note inserts per memory, blocks of {args.block} "
                f"alternating, the first {args.warmup} of each uncounted, seed {args.seed}",
            ),
            ("memories", f"{with_paths} (as made), {without} (without {len(_DROP)} structures)"),
        ],
    )
    sides = {
        "with the fast paths' structures": await SqlNotes.connect(
            urls.database, memory_schema(with_paths)
        ),
        "without them": await SqlNotes.connect(urls.database, memory_schema(without)),
    }
    samples: dict[str, list[float]] = {label: [] for label in sides}
    notes = payloads(2 * args.notes, args.seed)
    try:
        for start in range(0, args.notes, args.block):
            for offset, (label, sql) in enumerate(sides.items()):
                first = 2 * start + offset * args.block
                for note in notes[first : first + min(args.block, args.notes - start)]:
                    began = time.perf_counter()
                    await sql.create(note, _ACTOR)
                    samples[label].append(time.perf_counter() - began)
    finally:
        for sql in sides.values():
            await sql.close()
        for memory in (with_paths, without):
            await stage.memories.delete(memory, confirm=memory)
        await stage.db.close()
    rows = []
    for label, values in samples.items():
        lat = Latency.of(values[args.warmup :])
        rows.append([label, str(lat.count), ms(lat.p50), ms(lat.p95), ms(lat.mean)])
    base = Latency.of(samples["without them"][args.warmup :])
    head = Latency.of(samples["with the fast paths' structures"][args.warmup :])
    rows.append(
        [
            "difference",
            "",
            f"{(head.p50 - base.p50) * 1000:+.3f}",
            f"{(head.p95 - base.p95) * 1000:+.3f}",
            f"{(head.mean - base.mean) * 1000:+.3f}",
        ]
    )
    print(table(["note insert", "n", "p50 ms", "p95 ms", "mean ms"], rows, "lrrrr"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.lexical_writes", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--notes", type=int, default=8000, help="inserts per memory")
    parser.add_argument("--block", type=int, default=250, help="inserts per alternating block")
    parser.add_argument("--warmup", type=int, default=200, help="uncounted inserts per memory")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    if args.block < 1 or args.warmup < 0 or args.notes <= args.warmup:
        parser.error("--block >= 1, --warmup >= 0 and --notes > --warmup")
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        asyncio.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
