"""LEXICAL search quality on a BEIR-format collection, in process, next to bm25s.

``python -m benchmarks.lexical --dataset DIR [--split test] [--home DIR]``

The corpus goes into one fresh memory by COPY into ``note`` (title, and the text as
content), so the note triggers fill the lexical index as for any insert; nothing is
embedded, no server runs. Every judged query goes through ``SearchService.search(mode
LEXICAL, limit 100)``, the service the GraphQL resolver calls, one at a time. A query the
service refuses counts as an empty ranking, and the refusals are counted. bm25s (the
same baseline as ``benchmarks.beir``) runs on the same documents and queries when it is
installed. This is the quick loop for the lexical leg: ``benchmarks.beir`` measures the
whole path, with embeddings, over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from uuid import UUID, uuid4

from benchmarks._common import (
    Stage,
    backing_services,
    bench_home,
    common_setup,
    print_setup,
    table,
)
from benchmarks._ir import Dataset, evaluate, load_beir
from benchmarks.beir import _bm25s
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.errors import FortemiError
from fortemi.retrieval.search import Scope, SearchMode, SearchRequest, SearchService

__all__ = ["main"]

DEPTH = 100
_BATCH = 500


def _words(text: str) -> int:
    return len(text.split())


async def _load(stage: Stage, memory: str, data: Dataset) -> dict[UUID, str]:
    ids = {uuid4(): doc.id for doc in data.corpus}
    rows = [
        (note_id, doc.title, doc.text, "blake3:-", "bench", "bench")
        for note_id, doc in zip(ids, data.corpus, strict=True)
    ]
    for start in range(0, len(rows), _BATCH):
        async with stage.db.memory_transaction(memory) as conn:
            await conn.copy_records_to_table(
                "note",
                records=rows[start : start + _BATCH],
                columns=["id", "title", "content", "content_hash", "created_by", "updated_by"],
            )
    async with stage.db.memory_transaction(memory) as conn:
        await conn.execute("ANALYZE lex_posting")
    return ids


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    data = load_beir(args.dataset, args.split)
    if args.limit_queries:
        keep = list(data.queries)[: args.limit_queries]
        data = Dataset(
            data.corpus,
            {q: data.queries[q] for q in keep},
            {q: data.qrels[q] for q in keep},
        )
    lengths = [_words(text) for text in data.queries.values()]
    setup = await common_setup(urls, embedded, home)
    setup += [
        ("dataset", f"{args.dataset} split {args.split}"),
        (
            "workload",
            f"{len(data.corpus):,} documents, {len(data.queries):,} judged queries "
            f"(words: median {statistics.median(lengths):g}, max {max(lengths)}, "
            f"{sum(chr(34) in t for t in data.queries.values())} with a quotation mark); "
            f"SearchService LEXICAL, limit {DEPTH}, in process",
        ),
    ]
    print_setup("benchmarks.lexical: LEXICAL nDCG@10 next to bm25s", setup)
    stage = await Stage.prepare(home, urls)
    memory = await stage.open_memory()
    try:
        started = time.monotonic()
        ids = await _load(stage, memory, data)
        print(f"loaded {len(ids):,} notes in {time.monotonic() - started:.1f} s", flush=True)
        service = SearchService(stage.db, None)
        rankings: dict[str, list[str]] = {}
        refused: dict[str, int] = {}
        took: list[float] = []
        for query, text in data.queries.items():
            began = time.perf_counter()
            try:
                outcome = await service.search(
                    [Scope(memory, None)],
                    SearchRequest(query=text, mode=SearchMode.LEXICAL, limit=DEPTH),
                )
            except FortemiError as exc:
                refused[exc.message] = refused.get(exc.message, 0) + 1
                rankings[query] = []
                continue
            took.append(time.perf_counter() - began)
            rankings[query] = [ids[hit.note_id] for hit in outcome.hits]
        rows = []
        ours = evaluate(rankings, data.qrels)
        p50 = statistics.median(took) * 1000 if took else float("nan")
        rows.append(["Fortemi LEXICAL", f"{ours.ndcg:.3f}", f"{ours.recall:.3f}", f"{p50:.1f}"])
        baseline = _bm25s(data)
        if baseline.failure:
            rows.append(["bm25s", "-", "-", baseline.failure])
        else:
            theirs = evaluate(baseline.rankings, data.qrels)
            p50 = statistics.median(baseline.latencies) * 1000
            rows.append(
                ["bm25s (lucene)", f"{theirs.ndcg:.3f}", f"{theirs.recall:.3f}", f"{p50:.1f}"]
            )
        print(table(["run", "nDCG@10", "Recall@100", "p50 ms"], rows, "lrrr"))
        for message, count in refused.items():
            print(f"refused: {count} queries: {message}")
        print(flush=True)
    finally:
        await stage.memories.delete(memory, confirm=memory)
        await stage.db.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.lexical", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--dataset", type=Path, required=True, help="a BEIR-format folder")
    parser.add_argument("--split", default="test", help="qrels/<split>.tsv (default test)")
    parser.add_argument("--limit-queries", type=int, help="trial: the first N judged queries")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        asyncio.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
