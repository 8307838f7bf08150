"""Retrieval quality on a BEIR collection through the public API, next to bm25s.

``python -m benchmarks.beir --dataset DIR [--split test] [--home DIR] [--batch 200]
[--timeout 3600] [--stall 60] [--no-exact-dense] [--limit-docs N] [--limit-queries N]
[--lexical-only] [--keep-memory]``

The corpus of any BEIR-format folder (see :mod:`benchmarks._ir`) goes into one fresh
memory through GraphQL ``upsertExternalNotes`` (source ``beir``, external id = the
document's ``_id``, its title and text), ``--batch`` items per call. A ``fortemi worker``
process (all tiers) runs the jobs that chunk and embed them, beside the server (one uvicorn
worker, as the other benchmarks run it). ``searchIndexStatus`` is polled until no
embedding job is pending and every chunk is embedded (bounded by ``--timeout``, and by
``--stall`` seconds without a pending job or a change).
"notes/s loaded" is the corpus over the upsert calls; "notes/s until searchable" is the
corpus over the time from the first upsert to the poll that found the index complete.

Then the worker is stopped (the graph's jobs it would run next, tagging and linking, would
take the CPU the searches are timed on) and, once the memory's lexical segment answers
(the first search starts its build; the wait is printed), every query of the split's
qrels goes through GraphQL ``search`` (limit 100), one at a time over one keep-alive
connection, once per run: LEXICAL (the default path: the segment), LEXICAL-EXHAUSTIVE
(``lexicalPruning: false``),
SEMANTIC, HYBRID with RRF and HYBRID with RSF, after ``--warmup`` uncounted queries each.
Hits map back to documents through ``note { externalId }``. Latency is the client's, from
the request to the last byte of the response; ``tookMs`` is the server's own figure.

Baselines in the same run, on the same documents and queries, in this process:

* **bm25s** (if installed: ``pip install bm25s PyStemmer``; a benchmark-only dependency):
  its defaults (method lucene, k1 1.5, b 0.75), PyStemmer's English stemmer and bm25s's
  English stop words, each document indexed as title + " " + text, top 100.
* **MiniLM exact** (unless ``--no-exact-dense``; needs ``fortemi.inference.local`` and its
  model): brute-force cosine over the local model's vectors of title + " " + text, and
  RRF(k=60) of it with bm25s.

nDCG@10 and Recall@100 follow trec_eval/BEIR (:mod:`benchmarks._ir`), averaged over the
queries with a relevant document. ``--limit-docs`` and ``--limit-queries`` make a trial
subset (the first queries of the split; the documents judged for them, then the corpus in
order): its figures are not comparable with the reference points.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from benchmarks._client import RawPoster, describe
from benchmarks._common import (
    HOST,
    REPO,
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
from benchmarks._ir import Dataset, Document, evaluate, load_beir, rrf
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.notes.validation import MAX_TITLE_CHARS

__all__ = ["main"]

DEPTH = 100  # hits asked for per query: Recall@100 needs them
POLL = 0.5  # seconds between searchIndexStatus polls
PROGRESS = 10.0  # seconds between progress lines
SEGMENT_WAIT = 120.0  # seconds to wait for the lexical segment before the searches
RUNS = {
    "LEXICAL": "mode: LEXICAL",
    # the same ranking by scoring every posting: the baseline of the pruned top-k path
    "LEXICAL-EXHAUSTIVE": "mode: LEXICAL, lexicalPruning: false",
    "SEMANTIC": "mode: SEMANTIC",
    "HYBRID-RRF": "mode: HYBRID, fusion: RRF",
    "HYBRID-RSF": "mode: HYBRID, fusion: RSF",
}
# nDCG@10 on SciFact's 300 test queries (see ../shared/corpora/README.md).
REFERENCES = [
    ("BM25, Anserini (BEIR, published)", 0.665),
    ("bm25s, English stemmer + stop words (measured)", 0.686),
    ("all-MiniLM-L6-v2 dense (measured)", 0.645),
    ("RRF(k=60) of bm25s + MiniLM (measured)", 0.717),
]
BM25S = "bm25s (in-process, no HTTP)"
GOALS = [("lexical", ["LEXICAL"], 0.68), ("hybrid", ["HYBRID-RRF", "HYBRID-RSF"], 0.72)]
_UPSERT = (
    "mutation Load($input: UpsertExternalNotesInput!) { upsertExternalNotes(input: $input) "
    "{ created updated unchanged conflicts } }"
)
_STATUS = "query { searchIndexStatus { notes chunks embeddedChunks pendingEmbeddingJobs model } }"


@dataclass
class Row:
    """One run's rankings and timings (a baseline's, or one search mode's)."""

    label: str
    rankings: dict[str, list[str]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)  # seconds
    took: list[float] = field(default_factory=list)  # the server's tookMs, in ms
    degraded: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    failure: str | None = None  # why there are no figures


class GraphQLError(RuntimeError):
    pass


class Api:
    """GraphQL over one keep-alive connection; errors come back as :class:`GraphQLError`."""

    def __init__(self, poster: RawPoster) -> None:
        self._poster = poster

    async def call(self, query: str, variables: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        started = time.perf_counter()
        status, content = await self._poster.post(body)
        elapsed = time.perf_counter() - started
        result: dict[str, Any] = json.loads(content)
        if status != 200 or result.get("errors") or not result.get("data"):
            errors = result.get("errors") or [{"message": f"HTTP {status}"}]
            codes = {str((e.get("extensions") or {}).get("code")) for e in errors} - {"None"}
            message = "; ".join(str(e.get("message")) for e in errors)
            raise GraphQLError(f"{message} {sorted(codes)}" if codes else message)
        data: dict[str, Any] = result["data"]
        return elapsed, data


# -- the collection ---------------------------------------------------------------------------


def _subset(data: Dataset, docs: int | None, queries: int | None) -> Dataset:
    """The first ``queries`` judged queries, and the documents judged for them followed by
    the rest of the corpus in order, ``docs`` in all (more if more are judged)."""
    kept = list(data.queries)[:queries] if queries is not None else list(data.queries)
    qrels = {query: data.qrels[query] for query in kept}
    corpus = data.corpus
    if docs is not None:
        judged = {doc for grades in qrels.values() for doc in grades}
        first = [d for d in corpus if d.id in judged]
        corpus = first + [d for d in corpus if d.id not in judged][: max(0, docs - len(first))]
    return Dataset(corpus, {query: data.queries[query] for query in kept}, qrels)


def _doc_text(doc: Document) -> str:
    return f"{doc.title} {doc.text}".strip()


# -- baselines in this process --------------------------------------------------------------


def _bm25s(data: Dataset) -> Row:
    row = Row(BM25S)
    try:
        import bm25s
        import Stemmer
    except ImportError as exc:
        row.failure = f"not installed ({exc.name}): pip install bm25s PyStemmer"
        return row
    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(
        [_doc_text(d) for d in data.corpus], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    ids = [d.id for d in data.corpus]
    depth = min(DEPTH, len(ids))
    for query, text in data.queries.items():
        started = time.perf_counter()
        asked = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        found, _ = retriever.retrieve(asked, k=depth, show_progress=False, n_threads=1)
        row.latencies.append(time.perf_counter() - started)
        row.rankings[query] = [ids[i] for i in found[0]]
    return row


def _embedder() -> Callable[[list[str]], Any] | str:
    """The local model's blocking embed (unit rows; failures as RuntimeError), or why not."""
    try:
        from fortemi.inference.errors import InferenceError
        from fortemi.inference.local import LocalEmbeddingBackend
    except ImportError as exc:
        return f"fortemi.inference.local is not available ({exc})"
    backend = LocalEmbeddingBackend()

    def embed(texts: list[str]) -> Any:
        try:
            return backend.embed_blocking(texts)
        except InferenceError as exc:
            raise RuntimeError(str(exc)) from exc

    return embed


def _exact_dense(data: Dataset, lexical: Row) -> list[Row]:
    """Brute-force cosine with the local model, and its RRF with bm25s (if it ran)."""
    dense = Row("MiniLM exact (numpy, in-process)")
    fused = Row("RRF(k=60) of bm25s + MiniLM exact")
    embed = _embedder()
    if isinstance(embed, str):
        dense.failure = fused.failure = embed
        return [dense, fused]
    texts, batch, parts = [_doc_text(d) for d in data.corpus], 256, []
    started = last = time.monotonic()
    try:
        for start in range(0, len(texts), batch):
            parts.append(embed(texts[start : start + batch]))
            if time.monotonic() - last >= PROGRESS:
                last = time.monotonic()
                done = min(start + batch, len(texts))
                print(f"  MiniLM exact: {done}/{len(texts)} documents embedded", flush=True)
        matrix = np.concatenate(parts)
        print(f"  MiniLM exact: corpus embedded in {time.monotonic() - started:.0f} s", flush=True)
        ids, depth = [d.id for d in data.corpus], min(DEPTH, len(data.corpus))
        for query, text in data.queries.items():
            began = time.perf_counter()
            scores = matrix @ embed([text])[0]
            top = np.argpartition(-scores, depth - 1)[:depth]
            dense.latencies.append(time.perf_counter() - began)
            dense.rankings[query] = [ids[i] for i in top[np.argsort(-scores[top], kind="stable")]]
    except RuntimeError as exc:
        dense.failure = fused.failure = f"the local model failed: {exc}"
        return [dense, fused]
    if lexical.failure is not None:
        fused.failure = "needs the bm25s row"
    else:
        for query in data.queries:
            pair = [lexical.rankings[query], dense.rankings[query]]
            fused.rankings[query] = rrf(pair, k=60)[:DEPTH]
    return [dense, fused]


# -- through the server ---------------------------------------------------------------------


class WorkerProcess:
    """``python -m fortemi worker`` (all tiers) on the same PostgreSQL and Redis."""

    def __init__(self, home: Path, urls: ServiceUrls, threads: int) -> None:
        self._argv = [sys.executable, "-m", "fortemi", "worker", "--threads", str(threads)]
        self._env = {
            **os.environ,
            "DATABASE_URL": urls.database,
            "REDIS_URL": urls.redis,
            "FORTEMI_HOME": str(home),
            "FORTEMI_LOG_LEVEL": "WARNING",
        }
        self._env.pop("OIDC_ISSUER", None)
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(*self._argv, cwd=REPO, env=self._env)

    def exit_code(self) -> int | None:
        """None while it runs."""
        return None if self._proc is None else self._proc.returncode

    def cpu_seconds(self) -> float:
        assert self._proc is not None
        try:
            times = psutil.Process(self._proc.pid).cpu_times()
        except psutil.NoSuchProcess:
            return float("nan")
        return float(times.user + times.system)

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()  # stops claiming; running jobs get the grace period
        try:
            await asyncio.wait_for(proc.wait(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@dataclass
class Ingest:
    notes: int = 0
    batches: int = 0
    load_seconds: float = 0.0
    searchable_seconds: float | None = None  # None: not complete within --timeout
    status: dict[str, Any] | None = None  # the last searchIndexStatus seen
    problem: str | None = None
    server_cpu: float = 0.0
    worker_cpu: float = 0.0


def _item(doc: Document) -> dict[str, str]:
    # Titles past the note limit are cut (rare in BEIR; the text still carries the words).
    return {"externalId": doc.id, "title": doc.title[:MAX_TITLE_CHARS], "content": doc.text}


async def _load(api: Api, data: Dataset, args: argparse.Namespace, ingest: Ingest) -> None:
    """The corpus through ``upsertExternalNotes``, ``--batch`` items a call."""
    corpus = data.corpus
    started = time.monotonic()
    for start in range(0, len(corpus), args.batch):
        items = [_item(d) for d in corpus[start : start + args.batch]]
        _, done = await api.call(_UPSERT, {"input": {"source": "beir", "items": items}})
        counts = done["upsertExternalNotes"]
        if counts["created"] + counts["updated"] + counts["unchanged"] != len(items):
            raise RuntimeError(f"upsert of {len(items)} items answered {counts}")
        ingest.notes += len(items)
        ingest.batches += 1
    ingest.load_seconds = time.monotonic() - started
    print(
        f"loaded {ingest.notes} notes in {ingest.load_seconds:.1f} s "
        f"({ingest.notes / ingest.load_seconds:.0f} notes/s)",
        flush=True,
    )


async def _ingest(
    api: Api, data: Dataset, args: argparse.Namespace, ingest: Ingest, worker: WorkerProcess
) -> None:
    """Load the corpus, then wait until the index is complete, the timeout, or a failure."""
    started = time.monotonic()
    await _load(api, data, args, ingest)
    print("waiting for the index", flush=True)
    last = changed = time.monotonic()
    while True:
        try:
            _, answer = await api.call(_STATUS, {})
        except GraphQLError as exc:
            ingest.problem = f"searchIndexStatus failed: {exc}"
            print(ingest.problem, flush=True)
            return
        status = answer["searchIndexStatus"]
        now = time.monotonic()
        if status != ingest.status:
            ingest.status, changed = status, now
        if (
            status["pendingEmbeddingJobs"] == 0
            and status["embeddedChunks"] == status["chunks"]
            and status["notes"] >= ingest.notes
            and (status["chunks"] > 0 or ingest.notes == 0)
        ):
            ingest.searchable_seconds = now - started
            print(f"searchable after {ingest.searchable_seconds:.1f} s: {status}", flush=True)
            return
        if worker.exit_code() is not None:
            ingest.problem = f"the worker exited ({worker.exit_code()}); index: {status}"
        elif status["pendingEmbeddingJobs"] == 0 and now - changed > args.stall:
            ingest.problem = f"no embedding job pending and no change for {args.stall:g} s"
        elif now - started > args.timeout:
            ingest.problem = f"index not complete after --timeout {args.timeout:g} s"
        if ingest.problem is not None:
            print(f"{ingest.problem}: {status}; searching anyway", flush=True)
            return
        if now - last >= PROGRESS:
            last = now
            print(f"  {now - started:.0f} s: {status}", flush=True)
        await asyncio.sleep(POLL)


def _search_query(arguments: str) -> str:
    return (
        f"query Search($q: String!) {{ search(query: $q, {arguments}, limit: {DEPTH}) "
        "{ hits { note { externalId } } degraded degradedReason tookMs } }"
    )


async def _segment_ready(api: Api, text: str) -> None:
    """Search until the memory's lexical segment answers (the first search starts its build
    in the background), so LEXICAL is measured in steady state; say how long it took."""
    document = (
        "query Ready($q: String!) { search(query: $q, mode: LEXICAL, limit: 1, explain: true) "
        "{ lexical { path } } }"
    )
    started = time.perf_counter()
    path = ""
    while time.perf_counter() - started < SEGMENT_WAIT:
        _, answer = await api.call(document, {"q": text})
        path = answer["search"]["lexical"]["path"]
        if path == "segment":
            print(f"lexical segment answering after {time.perf_counter() - started:.1f} s")
            return
        await asyncio.sleep(POLL)
    print(
        f"lexical segment not answering after {SEGMENT_WAIT:.0f} s (path {path}): measured anyway"
    )


async def _search(api: Api, label: str, data: Dataset, warmup: int) -> Row:
    """One run over all queries; it stops early when its first three queries all fail."""
    row, document = Row(label), _search_query(RUNS[label])
    texts = list(data.queries.values())
    for text in (texts * warmup)[:warmup]:
        try:
            await api.call(document, {"q": text})
        except GraphQLError:
            break  # the measured queries report it
    for query, text in data.queries.items():
        try:
            elapsed, answer = await api.call(document, {"q": text})
        except GraphQLError as exc:
            row.errors[str(exc)] += 1
            row.rankings[query] = []  # counts as a miss
            if row.errors.total() == 3 and len(row.latencies) == 0:
                row.failure = str(exc)
                return row
            continue
        found = answer["search"]
        row.latencies.append(elapsed)
        row.took.append(float(found["tookMs"]))
        if found["degraded"]:
            row.degraded[str(found["degradedReason"])] += 1
        ranking = [str(hit["note"]["externalId"]) for hit in found["hits"]]
        row.rankings[query] = ranking
    return row


# -- report ---------------------------------------------------------------------------------


def _figures(row: Row, data: Dataset) -> list[str]:
    if row.failure is not None:
        return [row.label, "-", "-", "-", "-", "-", "-", "failed (below)"]
    quality = evaluate(row.rankings, data.qrels, ndcg_k=10, recall_k=100)
    lat = Latency.of(row.latencies) if row.latencies else None
    took = Latency.of(row.took) if row.took else None
    notes = [f"{row.errors.total()} errors"] if row.errors else []
    notes += [f"{row.degraded.total()} degraded"] if row.degraded else []
    return [
        row.label,
        f"{quality.ndcg:.3f}",
        f"{quality.recall:.3f}",
        ms(lat.p50) if lat else "-",
        ms(lat.p95) if lat else "-",
        f"{took.p50:.2f}" if took else "-",
        f"{took.p95:.2f}" if took else "-",
        ", ".join(notes),
    ]


def _remarks(rows: Sequence[Row], corpus: int) -> list[str]:
    """Why a row failed, its commonest errors and degradations, a short hit list."""
    lines = []
    for row in rows:
        if row.failure is not None:
            lines.append(f"{row.label}: {row.failure}")
            continue
        lines += [f"{row.label}: {n} x {why[:300]}" for why, n in row.errors.most_common(3)]
        lines += [f"{row.label}: degraded {n} x {why}" for why, n in row.degraded.most_common(3)]
        most = max((len(ranking) for ranking in row.rankings.values()), default=0)
        if most < min(DEPTH, corpus):
            lines.append(f"{row.label}: at most {most} hits for any query (asked for {DEPTH})")
    return lines


def _ingest_lines(ingest: Ingest) -> list[tuple[str, str]]:
    until = ingest.searchable_seconds
    rate = f"{ingest.notes / ingest.load_seconds:.0f}" if ingest.load_seconds else "-"
    lines = [
        ("loaded", f"{ingest.notes} notes in {ingest.batches} calls, {ingest.load_seconds:.1f} s: "
                   f"{rate} notes/s loaded"),
        ("searchable", f"after {until:.1f} s: {ingest.notes / until:.1f} notes/s until "
                       "searchable (ingest end to end)" if until else "not reached"),
        ("CPU", f"server {ingest.server_cpu:.1f} s, worker {ingest.worker_cpu:.1f} s "
                "(from the first upsert to the end of the wait)"),
        ("index", str(ingest.status or "-")),
    ]  # fmt: skip
    return lines + ([("problem", ingest.problem)] if ingest.problem else [])


def _goals(rows: Sequence[Row], data: Dataset) -> str:
    """The reference points, then each goal met or not, next to bm25s in this run."""
    by_label = {row.label: row for row in rows}

    def ndcg(label: str) -> float | None:
        row = by_label.get(label)
        return None if row is None or row.failure else evaluate(row.rankings, data.qrels).ndcg

    here = ndcg(BM25S)
    lines = [[f"reference: {name}", "", f"{value:.3f}", ""] for name, value in REFERENCES]
    for name, labels, target in GOALS:
        for label in labels:
            value = ndcg(label)
            result = "not measured" if value is None else "met" if value >= target else "NOT met"
            shown = "-" if value is None else f"{value:.3f}"
            lines.append([f"goal: {name} >= {target:.2f}", label, shown, result])
    if here is not None:
        lines.append(["bm25s in this run", BM25S, f"{here:.3f}", ""])
    return table(["SciFact test, nDCG@10", "run", "value", "result"], lines, "llrl")


def _report(rows: Sequence[Row], data: Dataset, ingest: Ingest, comparable: bool) -> None:
    width = max(len(key) for key, _ in _ingest_lines(ingest))
    print("\n".join(f"{key.ljust(width)}  {value}" for key, value in _ingest_lines(ingest)))
    print()
    headers = "run|nDCG@10|Recall@100|p50 ms|p95 ms|tookMs p50|tookMs p95|notes".split("|")
    print(table(headers, [_figures(row, data) for row in rows], "lrrrrrrl"))
    remarks = _remarks(rows, len(data.corpus))
    print("\n".join(["", *remarks, ""] if remarks else [""]))
    if comparable:
        print(_goals(rows, data), flush=True)
    else:
        print(
            "reference points and goals are for SciFact's 300 test queries: not shown", flush=True
        )


# -- setup and entry point ------------------------------------------------------------------


def _version(name: str) -> str:
    try:
        return f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name} not installed"


async def _run(
    args: argparse.Namespace, data: Dataset, home: Path, urls: ServiceUrls, embedded: bool
) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    port, token, db, memories = stage.port, stage.token, stage.db, stage.memories
    memory = await stage.open_memory()
    server = ServerProcess(
        "fortemi", port=port, home=home, urls=urls, loop=args.loop, http=args.http
    )
    worker = WorkerProcess(home, urls, args.worker_threads)
    runs = [label for label in RUNS if not args.lexical_only or label.startswith("LEXICAL")]
    _, loop_name = client_loop_factory()
    trial = args.limit_docs is not None or args.limit_queries is not None
    judgements = sum(len(grades) for grades in data.qrels.values())
    setup += [
        ("dataset", f"{args.dataset.resolve()}, split {args.split}" + (" (TRIAL SUBSET)" * trial)),
        (
            "collection",
            f"{len(data.corpus)} documents, {len(data.queries)} queries, {judgements} judgements",
        ),
        ("baselines", ", ".join(_version(n) for n in ("bm25s", "PyStemmer", "numpy"))),
        (
            "server",
            f"uvicorn, 1 worker in a subprocess, loop {args.loop}, http {args.http}; "
            + (
                "no job worker (--lexical-only)"
                if args.lexical_only
                else f"`fortemi worker` subprocess, all tiers, {args.worker_threads} threads"
            ),
        ),
        ("client", f"{describe('raw')}, 1 keep-alive connection, sequential, loop {loop_name}"),
        (
            "workload",
            f"upsertExternalNotes, source beir, {args.batch} per call; search limit "
            f"{DEPTH}, {len(runs)} runs, {args.warmup} warm-up queries each, other arguments "
            "at their defaults",
        ),
        (
            "memory",
            f"{memory}, fresh, "
            + (f"kept in {home}" if args.keep_memory else "dropped at the end"),
        ),
    ]
    print_setup("benchmarks.beir: nDCG@10 and Recall@100 through GraphQL search", setup)
    print("baselines: bm25s ...", flush=True)
    baselines = [_bm25s(data)]
    if args.exact_dense:
        baselines += _exact_dense(data, baselines[0])
    searched = [Row(label, failure="not searched") for label in runs]
    ingest = Ingest()
    try:
        async with serving(server):
            if not args.lexical_only:
                await worker.start()
            headers = {
                "authorization": f"Bearer {token}",
                "x-fortemi-memory": memory,
                "content-type": "application/json",
            }
            poster = await RawPoster.open(HOST, server.port, headers)
            try:
                api = Api(poster)
                if args.lexical_only:  # nothing to embed: searchable once loaded
                    await _load(api, data, args, ingest)
                    ingest.searchable_seconds = ingest.load_seconds
                else:
                    cpu = server.cpu_seconds(), worker.cpu_seconds()
                    await _ingest(api, data, args, ingest, worker)
                    ingest.server_cpu = server.cpu_seconds() - cpu[0]
                    ingest.worker_cpu = worker.cpu_seconds() - cpu[1]
                    # The index is complete; the worker would go on with the graph's jobs
                    # (tagging, linking) and take the CPU the searches are timed on.
                    await worker.stop()
                await _segment_ready(api, next(iter(data.queries.values())))
                for i, label in enumerate(runs):
                    print(f"searching: {label} ...", flush=True)
                    searched[i] = await _search(api, label, data, args.warmup)
            finally:
                await poster.aclose()
                await worker.stop()
    except (GraphQLError, RuntimeError, OSError) as exc:
        # The baselines are still worth printing; the reason is printed with them.
        ingest.problem = f"{type(exc).__name__}: {exc}"
        print(f"server phase stopped: {ingest.problem}", flush=True)
    finally:
        if not args.keep_memory:
            await memories.delete(memory, confirm=memory)
        await db.close()
    print()
    comparable = args.dataset.resolve().name == "scifact" and args.split == "test" and not trial
    _report([*searched, *baselines], data, ingest, comparable)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.beir", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--dataset", type=Path, required=True, help="a BEIR-format folder")
    parser.add_argument("--split", default="test", help="qrels/<split>.tsv (default test)")
    parser.add_argument("--batch", type=int, default=200, help="items per upsert (default 200)")
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="bound on the index wait, s (default 3600)"
    )
    parser.add_argument(
        "--stall",
        type=float,
        default=60.0,
        help="stop waiting when no embedding job is pending and the index status has not "
        "changed for this long, s (default 60)",
    )
    parser.add_argument("--warmup", type=int, default=5, help="uncounted queries per run")
    parser.add_argument("--worker-threads", type=int, default=2, help="job threads (default 2)")
    parser.add_argument("--limit-docs", type=int, help="trial: at most N documents (+ judged)")
    parser.add_argument("--limit-queries", type=int, help="trial: the first N judged queries")
    parser.add_argument(
        "--no-exact-dense",
        dest="exact_dense",
        action="store_false",
        help="skip the in-process MiniLM baseline (it embeds the corpus: minutes)",
    )
    parser.add_argument(
        "--lexical-only",
        action="store_true",
        help="only the LEXICAL runs: no worker, no embedding, searched once loaded",
    )
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    parser.add_argument(
        "--keep-memory",
        action="store_true",
        help="leave the loaded memory in --home to look at or search later (needs --home)",
    )
    server_options(parser)
    args = parser.parse_args(argv)
    if min(args.batch, args.worker_threads) < 1 or min(args.timeout, args.stall) <= 0:
        parser.error("--batch, --worker-threads, --timeout and --stall must be positive")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    if args.keep_memory and args.home is None:
        parser.error("--keep-memory needs --home: a temporary home is removed at the end")
    if (args.limit_docs or 1) < 1 or (args.limit_queries or 1) < 1:
        parser.error("--limit-docs and --limit-queries must be positive")
    try:
        data = load_beir(args.dataset, args.split)
    except (OSError, ValueError) as exc:
        parser.error(f"--dataset {args.dataset}: {exc}")
    data = _subset(data, args.limit_docs, args.limit_queries)
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, data, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
