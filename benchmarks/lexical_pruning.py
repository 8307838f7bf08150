"""The lexical leg's segment and pruned top-k paths next to its exhaustive path, in
process, at scale.

``python -m benchmarks.lexical_pruning [--notes 100000] [--queries 150] [--fetch 10,50,100]
[--home DIR] [--seed N]``

Data (:mod:`benchmarks._synthetic`): ``--notes`` notes of 60 to 150 Zipf-distributed English
words in 64 topics, by COPY into a fresh memory (the note triggers fill the lexical index
as for any insert), then VACUUM ANALYZE. Queries, in turn: *selective* (2 to 6 words of one
topic's long tail), *common* (2 to 6 of the most frequent words) and *mixed* (one topic
word and 1 to 3 common words: a rare, strong term among weak ones, the shape of most
natural-language questions).

Each query runs through :class:`~fortemi.retrieval.lexical.LexicalLeg` (the code the search
service runs, without HTTP) in a REPEATABLE READ transaction by three paths in rotating
order: the segment path (the memory's segment built first, its build time and size
printed), the pruned statements (no segment) and the exhaustive statement, for each
``--fetch`` (the leg's k: ``limit`` for a LEXICAL search, 50 for a hybrid one of 10).
Reported per kind: latency p50/p95 of each path, the share of queries the pruned path
took, postings read by the pruned path beside the query terms' postings (what the
exhaustive path and the segment path score), and any query whose rankings differ from
the exhaustive one (ids, order, or scores beyond 1e-9). Then the lexical index's sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
from benchmarks._synthetic import Corpus, vocabulary
from fortemi.inference.local import default_model_dir
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.notes.models import NoteFilter
from fortemi.retrieval.lexical import LexicalLeg, LexicalPath, LexicalTrace
from fortemi.retrieval.query import parse_query
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.segments import Segments

__all__ = ["main"]

_BATCH = 5000
_COMMON = 200


@dataclass
class Cell:
    segment: list[float] = field(default_factory=list)
    pruned: list[float] = field(default_factory=list)
    exhaustive: list[float] = field(default_factory=list)
    took_pruned: int = 0
    read: int = 0
    total: int = 0
    differ: int = 0


async def _load(db: Database, memory: str, corpus: Corpus, count: int) -> float:
    started = time.perf_counter()
    notes = corpus.notes(count)
    for start in range(0, count, _BATCH):
        rows = [
            (uuid.uuid4(), n.title, n.content, "bench", "bench", "bench")
            for n in notes[start : start + _BATCH]
        ]
        async with db.memory_transaction(memory) as conn:
            await conn.copy_records_to_table(
                "note",
                records=rows,
                columns=["id", "title", "content", "content_hash", "created_by", "updated_by"],
            )
    async with db.memory_transaction(memory) as conn:
        await conn.execute("ANALYZE")
    return time.perf_counter() - started


def _queries(corpus: Corpus, indexable: set[str], count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    common = [w for w in corpus.words[:_COMMON] if w in indexable]
    generated = corpus.queries(count, indexable.__contains__)
    found: list[tuple[str, str]] = []
    for i, query in enumerate(generated):
        if i % 3 == 2:  # mixed: one of the topic's words among common ones
            rare = rng.choice(query.text.split()) if query.kind == "selective" else None
            pool = [w for w in corpus.words[corpus.topic_words[query.topic]] if w in indexable]
            words = [rare or rng.choice(pool), *rng.sample(common, rng.randint(1, 3))]
            found.append(("mixed", " ".join(words)))
        else:
            found.append((query.kind, query.text))
    return found


async def _indexable(db: Database, memory: str, words: Sequence[str]) -> set[str]:
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT w FROM unnest($1::text[]) AS w WHERE length(to_tsvector('english', w)) > 0",
            [str(w) for w in words],
        )
    return {row["w"] for row in rows}


async def _measure(
    db: Database, memory: str, queries: list[tuple[str, str]], fetch: int, segments: Segments
) -> dict[str, Cell]:
    legs = {
        "segment": LexicalLeg(RetrievalRepository(), segments=segments),
        "pruned": LexicalLeg(RetrievalRepository()),
        "exhaustive": LexicalLeg(RetrievalRepository(), pruning=False),
    }
    order = list(legs)
    cells: dict[str, Cell] = {}
    for i, (kind, text) in enumerate(queries):
        cell = cells.setdefault(kind, Cell())
        query = parse_query(text)
        async with db.memory_transaction(memory, isolation="repeatable_read") as conn:
            results, traces = {}, {}
            for name in order[i % 3 :] + order[: i % 3]:
                traces[name] = LexicalTrace()
                started = time.perf_counter()
                results[name] = await legs[name].rank(
                    conn, memory, query, NoteFilter(), fetch, trace=traces[name]
                )
                getattr(cell, name).append(time.perf_counter() - started)
        if traces["segment"].path is not LexicalPath.SEGMENT:
            raise SystemExit(f"the segment path did not answer {text!r}: {traces['segment']}")
        cell.took_pruned += traces["pruned"].path is LexicalPath.PRUNED
        cell.read += traces["pruned"].postings_read
        cell.total += traces["segment"].postings_total
        b = results["exhaustive"]
        for a in (results["segment"], results["pruned"]):
            if [n for n, _ in a] != [n for n, _ in b] or any(
                abs(x - y) > 1e-9 for (_, x), (_, y) in zip(a, b, strict=True)
            ):
                cell.differ += 1
    return cells


def _report(fetch: int, cells: dict[str, Cell]) -> None:
    rows = []
    for kind, cell in cells.items():
        n = len(cell.pruned)
        g, p, e = Latency.of(cell.segment), Latency.of(cell.pruned), Latency.of(cell.exhaustive)
        rows.append(
            [
                kind,
                str(n),
                f"{ms(g.p50)} / {ms(g.p95)}",
                f"{ms(p.p50)} / {ms(p.p95)}",
                f"{ms(e.p50)} / {ms(e.p95)}",
                f"{cell.took_pruned}/{n}",
                f"{cell.read / n:,.0f} of {cell.total / n:,.0f}",
                str(cell.differ),
            ]
        )
    headers = ["queries", "n", "segment p50/p95 ms", "pruned p50/p95 ms"]
    headers += ["exhaustive p50/p95 ms", "took pruned", "pruned read (mean)", "rankings differ"]
    print(f"\nk = {fetch}")
    print(table(headers, rows, "lrrrrrrr"))


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    model_dir = default_model_dir()
    if model_dir is None:
        raise SystemExit("the local model is not installed (its vocabulary is the word list)")
    corpus = Corpus(vocabulary(model_dir), args.seed)
    memory = await stage.open_memory()
    try:
        loaded = await _load(stage.db, memory, corpus, args.notes)
        indexable = await _indexable(stage.db, memory, list(corpus.words))
        queries = _queries(corpus, indexable, args.queries, args.seed)
        setup += [
            ("data", f"{args.notes:,} synthetic notes loaded by COPY in {loaded:.0f} s"),
            ("workload", f"{len(queries)} queries (selective, common, mixed); k {args.fetch}"),
        ]
        print_setup("benchmarks.lexical_pruning: segment, pruned and exhaustive top k", setup)
        segments = Segments(stage.db, budget=2_000_000_000)
        started = time.perf_counter()
        segment = await segments.ready(memory)
        if segment is None:
            raise SystemExit("the segment was not built (see the log)")
        print(
            f"\nsegment: {segment.size:,} notes, {segment.postings:,} postings, "
            f"built in {time.perf_counter() - started:.1f} s"
        )
        try:
            for fetch in args.fetch:
                _report(fetch, await _measure(stage.db, memory, queries, fetch, segments))
        finally:
            await segments.close()
        async with stage.db.memory_transaction(memory) as conn:
            sizes = await conn.fetchrow(
                "SELECT pg_relation_size('lex_posting') AS heap, "
                "pg_relation_size('lex_posting_pkey') AS pkey, "
                "pg_relation_size('lex_posting_impact_idx') AS impact"
            )
        mb = {k: v / 2**20 for k, v in dict(sizes or {}).items()}
        print(
            f"\nlex_posting: heap {mb['heap']:.0f} MB, primary key {mb['pkey']:.0f} MB, "
            f"impact index {mb['impact']:.0f} MB (+{mb['impact'] / (mb['heap'] + mb['pkey']):.0%})"
        )
    finally:
        await stage.memories.delete(memory, confirm=memory)
        await stage.db.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lexical_pruning")
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument(
        "--fetch", type=lambda s: [int(x) for x in s.split(",")], default=[10, 50, 100]
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        asyncio.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
