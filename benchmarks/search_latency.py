"""Hybrid search latency through HTTP GraphQL at 10k and 100k chunks, next to the same
fused query sent straight to PostgreSQL, and HNSW recall@10 against exact search.

``python -m benchmarks.search_latency [--sizes 10000,100000] [--queries 200] [--home DIR]
[--seed N] [--sample 2000] [--keep]``

Data (:mod:`benchmarks._synthetic`): N notes of 60 to 150 Zipf-distributed English words in
64 topics, one chunk each. They go straight into a fresh memory's tables (COPY inside
``Database.memory_transaction``; the note triggers fill the lexical index). Vectors: the
first ``--sample`` notes embedded by the server's own embedding backend (the local
all-MiniLM-L6-v2 by default), every other note synthesised from that sample's geometry
(topic mean plus noise with the sample's within-topic covariance). They are written to the
embedding set the server searches (same model name, dimension and composition), whose HNSW
index is dropped during the load and rebuilt after it with its own definition. Then
VACUUM ANALYZE, as autovacuum would do soon after such a load.

Queries: ``--queries`` of 2 to 6 words, half "selective" (one topic's long-tail words)
and half "common" (the most frequent indexable words), reported apart. Their vectors come
from the real model, so the query embedding's cost is real.

Paths, one query at a time, in alternating blocks so all see the same caches:

* GraphQL ``search(query, mode: HYBRID, limit: 10)`` over HTTP with a bearer token, one
  keep-alive connection (the server embeds the query itself);
* the fused query as one SQL statement over asyncpg, written as the least work for the
  database (BM25 leg with the lexical leg's formula, HNSW leg with the server's over-fetch and
  ef_search, RRF k=60 in SQL, titles and chunks of the top 10), the query vector
  precomputed;
* for information: GraphQL ``mode: LEXICAL`` (once the memory's lexical segment answers:
  the wait is printed) and the BM25 leg alone in SQL;
* "embed query": the same backend embedding each query in this process. The server's
  embedding cannot be timed from outside, so "GraphQL minus embed" is the difference of
  the medians.

Recall@10 compares the HNSW top 10 with an exact scan (an ORDER BY expression the index
cannot serve) at several ``hnsw.ef_search`` values.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from benchmarks._client import RawPoster, describe
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
from benchmarks._synthetic import (
    CHUNKS,
    FETCH,
    LIMIT,
    RRF_K,
    Corpus,
    Ingest,
    Query,
    QueryKind,
    SqlSearch,
    load,
    server_ef,
    synthesize,
    vocabulary,
)
from fortemi.inference import InferenceBackend, build_backend
from fortemi.inference.local import default_model_dir
from fortemi.platform.database import Database, memory_schema
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import parse_note_id
from fortemi.retrieval.sets import composition_for

__all__ = ["main"]

RECALL_EFS = (40, 100, 150, 200, 300, 400, 600, 800)
SEED_TARGETS_MS = {10_000: 200.0, 100_000: 500.0}
GOAL_P95_MS, GOAL_AT, GOAL_RATIO, GOAL_RECALL = 25.0, 100_000, 1.5, 0.95
KINDS: tuple[QueryKind, ...] = ("selective", "common")
PATHS = ("gql_hybrid", "sql_fused", "gql_lexical", "sql_lexical")
PROGRESS = 10.0  # seconds between progress lines

_SEARCH = (
    "query Search($query: String!, $mode: SearchMode!) { search(query: $query, mode: $mode, "
    "limit: 10) { degraded degradedReason tookMs hits { score chunk note { id title } } } }"
)
_PATH = (
    "query Path($query: String!) { search(query: $query, mode: LEXICAL, limit: 1, "
    "explain: true) { lexical { path } } }"
)
SEGMENT_WAIT = 300.0  # seconds to wait for the memory's lexical segment before measuring


# -- measuring ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """A query, and its vector as the literal the server would send."""

    query: Query
    vector: str


@dataclass
class Samples:
    """One path's samples, by query kind, and the top 10 it returned per query."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    took: list[float] = field(default_factory=list)
    degraded: dict[str, int] = field(default_factory=dict)
    server_cpu: float | None = None
    tops: dict[int, list[UUID]] = field(default_factory=dict)

    def all(self) -> list[float]:
        return [s for kind in KINDS for s in self.latencies[kind]]


class Api:
    """``search`` over one keep-alive connection, opened afresh for each block: uvicorn
    closes a connection idle for 5 s, and the SQL blocks in between can take that long."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self._port = port
        self._headers = {**headers, "content-type": "application/json"}
        self._poster: RawPoster | None = None

    async def reconnect(self) -> None:
        await self.aclose()
        self._poster = await RawPoster.open(HOST, self._port, self._headers)

    async def aclose(self) -> None:
        poster, self._poster = self._poster, None
        if poster is not None:
            await poster.aclose()

    async def search(self, text: str, mode: str) -> tuple[float, dict[str, Any]]:
        body = json.dumps({"query": _SEARCH, "variables": {"query": text, "mode": mode}})
        assert self._poster is not None
        started = time.perf_counter()
        status, content = await self._poster.post(body.encode())
        elapsed = time.perf_counter() - started
        result: dict[str, Any] = json.loads(content)
        if status != 200 or result.get("errors"):
            raise RuntimeError(f"search failed ({status}): {result}")
        found: dict[str, Any] = result["data"]["search"]
        return elapsed, found

    async def lexical_path(self, text: str) -> str:
        body = json.dumps({"query": _PATH, "variables": {"query": text}})
        assert self._poster is not None
        status, content = await self._poster.post(body.encode())
        result: dict[str, Any] = json.loads(content)
        if status != 200 or result.get("errors"):
            raise RuntimeError(f"search failed ({status}): {result}")
        return str(result["data"]["search"]["lexical"]["path"])


Embed = Callable[[str], Awaitable[object]]


class Measure:
    def __init__(
        self,
        api: Api,
        sql: SqlSearch,
        server: ServerProcess,
        embed: Embed,
        docs: int,
        avgdl: float,
    ) -> None:
        self.api, self.sql, self.server, self._embed = api, sql, server, embed
        self.docs, self.avgdl = docs, avgdl

    async def embedding(self, probes: Sequence[tuple[int, Probe]], into: Samples) -> None:
        """The query embedding alone, in this process: the server's cannot be timed."""
        for _, probe in probes:
            started = time.perf_counter()
            await self._embed(probe.query.text)
            into.latencies[probe.query.kind].append(time.perf_counter() - started)

    async def graphql(self, probes: Sequence[tuple[int, Probe]], mode: str, into: Samples) -> None:
        await self.api.reconnect()
        cpu = self.server.cpu_seconds()
        for i, probe in probes:
            elapsed, found = await self.api.search(probe.query.text, mode)
            into.latencies[probe.query.kind].append(elapsed)
            into.took.append(float(found["tookMs"]))
            if found["degraded"]:
                reason = str(found["degradedReason"])
                into.degraded[reason] = into.degraded.get(reason, 0) + 1
            into.tops[i] = [parse_note_id(hit["note"]["id"]) for hit in found["hits"]]
        into.server_cpu = (into.server_cpu or 0.0) + self.server.cpu_seconds() - cpu

    async def segment_ready(self, text: str) -> None:
        """Search until the memory's lexical segment answers (the first search starts its
        build in the background), so GraphQL LEXICAL is measured in steady state."""
        await self.api.reconnect()
        started = time.perf_counter()
        path = ""
        while time.perf_counter() - started < SEGMENT_WAIT:
            path = await self.api.lexical_path(text)
            if path == "segment":
                print(f"lexical segment answering after {time.perf_counter() - started:.1f} s")
                return
            await asyncio.sleep(0.5)
            await self.api.reconnect()
        print(f"lexical segment not answering after {SEGMENT_WAIT:.0f} s (path {path})")

    async def fused(self, probes: Sequence[tuple[int, Probe]], into: Samples) -> None:
        for i, probe in probes:
            started = time.perf_counter()
            top = await self.sql.fused(probe.query.text, self.docs, self.avgdl, probe.vector)
            into.latencies[probe.query.kind].append(time.perf_counter() - started)
            into.tops[i] = top

    async def lexical(self, probes: Sequence[tuple[int, Probe]], into: Samples) -> None:
        for i, probe in probes:
            started = time.perf_counter()
            top = await self.sql.lexical(probe.query.text, self.docs, self.avgdl)
            into.latencies[probe.query.kind].append(time.perf_counter() - started)
            into.tops[i] = top


@dataclass
class Result:
    size: int
    ingest: Ingest
    paths: dict[str, Samples]
    recall: dict[int, float]
    recall_min: dict[int, float]
    hnsw_p50: dict[int, float]
    exact_p50: float
    matching: dict[str, list[int]]


async def measure(
    args: argparse.Namespace,
    probes: Sequence[Probe],
    api: Api,
    sql: SqlSearch,
    server: ServerProcess,
    embed: Embed,
    schema: str,
) -> dict[str, Samples]:
    docs, avgdl = await sql.corpus(schema)
    run = Measure(api, sql, server, embed, docs, avgdl)
    indexed = list(enumerate(probes))
    warm = indexed[: args.warmup]
    await run.segment_ready(probes[0].query.text)
    await run.graphql(warm, "HYBRID", Samples())
    await run.graphql(warm, "LEXICAL", Samples())
    await run.fused(warm, Samples())
    await run.lexical(warm, Samples())
    await run.embedding(warm, Samples())
    paths = {name: Samples() for name in (*PATHS, "embed")}
    for start in range(0, len(indexed), args.block):
        block = indexed[start : start + args.block]
        await run.graphql(block, "HYBRID", paths["gql_hybrid"])
        await run.fused(block, paths["sql_fused"])
        await run.graphql(block, "LEXICAL", paths["gql_lexical"])
        await run.lexical(block, paths["sql_lexical"])
        await run.embedding(block, paths["embed"])
    return paths


def _efs(size: int) -> list[int]:
    """The ef_search values measured at ``size``: the fixed ones and the server's."""
    return sorted({*RECALL_EFS, server_ef(size)})


async def recall(
    probes: Sequence[Probe], sql: SqlSearch, size: int
) -> tuple[dict[int, float], dict[int, float], dict[int, float], float]:
    """Mean and worst recall@10 per ef_search, HNSW p50 per ef, exact p50 (seconds)."""
    efs = _efs(size)
    hits: dict[int, list[float]] = {ef: [] for ef in efs}
    timings: dict[int, list[float]] = {ef: [] for ef in efs}
    exact_times: list[float] = []
    for probe in probes:
        took, exact = await sql.nearest(probe.vector, exact=True, ef=server_ef(size))
        exact_times.append(took)
        truth = set(exact)
        for ef in efs:
            took, found = await sql.nearest(probe.vector, exact=False, ef=ef)
            timings[ef].append(took)
            hits[ef].append(len(truth.intersection(found)) / max(1, len(truth)))
    return (
        {ef: float(np.mean(v)) for ef, v in hits.items()},
        {ef: min(v) for ef, v in hits.items()},
        {ef: Latency.of(v).p50 for ef, v in timings.items()},
        Latency.of(exact_times).p50,
    )


# -- reporting ------------------------------------------------------------------------------

_LABELS = {
    "gql_hybrid": "GraphQL HYBRID (server embeds the query)",
    "sql_fused": "SQL fused hybrid (asyncpg, 1 statement)",
    "gql_lexical": "GraphQL LEXICAL (for information)",
    "sql_lexical": "SQL BM25 leg only (for information)",
    "embed": "embed query (same backend, this process)",
}


def _cells(samples: Sequence[float]) -> list[str]:
    lat = Latency.of(samples)
    return [str(lat.count), ms(lat.p50), ms(lat.p95), ms(lat.p99), ms(lat.mean)]


def _overlap(a: Samples, b: Samples) -> str:
    shared = [len(set(a.tops[i]) & set(b.tops[i])) / LIMIT for i in a.tops if i in b.tops]
    return f"{np.mean(shared):.2f}" if shared else "-"


def _live(result: Result) -> bool:
    """Whether the semantic leg answered (no degraded hybrid answer)."""
    return not result.paths["gql_hybrid"].degraded


def _ratio(label: str, a: float, b: float) -> list[str]:
    return [label, f"{a * 1000:.2f} / {b * 1000:.2f}", f"{a / b:.2f}x"]


def _ratios(result: Result) -> list[list[str]]:
    p50 = {name: Latency.of(samples.all()).p50 for name, samples in result.paths.items()}
    p95 = {name: Latency.of(samples.all()).p95 for name, samples in result.paths.items()}
    embed = Latency.of(result.paths["embed"].all()).p50
    if _live(result):
        first = _ratio(
            "GraphQL HYBRID minus embed p50 / SQL fused p50",
            p50["gql_hybrid"] - embed,
            p50["sql_fused"],
        )
    else:
        first = _ratio(
            "GraphQL HYBRID (answered lexically) p50 / SQL BM25 p50",
            p50["gql_hybrid"],
            p50["sql_lexical"],
        )
    return [
        first,
        _ratio("GraphQL HYBRID p95 / SQL fused p95", p95["gql_hybrid"], p95["sql_fused"]),
        _ratio("GraphQL LEXICAL p50 / SQL BM25 p50", p50["gql_lexical"], p50["sql_lexical"]),
    ]


def report(result: Result) -> None:
    paths = result.paths
    print(f"## {result.size:,} notes, 1 chunk each", flush=True)
    ing = result.ingest
    total = ing.notes + ing.vectors + ing.hnsw + ing.vacuum
    rows = [
        [
            "notes (COPY; triggers fill lex_posting)",
            f"{ing.notes:.1f}",
            f"{result.size / ing.notes:,.0f} notes/s",
        ],
        ["chunks + vectors (COPY, binary)", f"{ing.vectors:.1f}", ""],
        ["HNSW index build", f"{ing.hnsw:.1f}", ""],
        ["VACUUM ANALYZE", f"{ing.vacuum:.1f}", ""],
        ["total", f"{total:.1f}", ""],
    ]
    print(table(["ingest", "s", ""], rows, "lrl"))
    print("sizes: " + ", ".join(f"{k} {v}" for k, v in sorted(result.ingest.sizes.items())))
    print()

    headers = [
        "path",
        "queries",
        "n",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "mean ms",
        "tookMs p50",
        "server CPU ms/q",
        "top-10 = SQL",
    ]
    rows = []
    for name in (*PATHS, "embed"):
        p = paths[name]
        twin = {"gql_hybrid": "sql_fused", "gql_lexical": "sql_lexical"}.get(name)
        for kind in ("all", *KINDS):
            samples = p.all() if kind == "all" else p.latencies[kind]
            took = f"{Latency.of(p.took).p50:.2f}" if p.took and kind == "all" else ""
            cpu = ""
            if p.server_cpu is not None and kind == "all":
                cpu = f"{p.server_cpu / len(p.all()) * 1000:.2f}"
            agree = _overlap(p, paths[twin]) if twin and kind == "all" else ""
            label = _LABELS[name] if kind == "all" else ""
            rows.append([label, kind, *_cells(samples), took, cpu, agree])
    print(table(headers, rows, "llrrrrrrrr"))
    for name in ("gql_hybrid", "gql_lexical"):
        for reason, count in paths[name].degraded.items():
            print(f"degraded ({_LABELS[name]}): {count} answers: {reason}")
    print()

    print(table(["ratio", "ms", "ratio"], _ratios(result), "lrr"))
    print()

    rows = []
    for ef in _efs(result.size):
        note = " (the server's default here)" if ef == server_ef(result.size) else ""
        rows.append(
            [
                f"{ef}{note}",
                f"{result.recall[ef]:.3f}",
                f"{result.recall_min[ef]:.1f}",
                ms(result.hnsw_p50[ef]),
            ]
        )
    print(
        table(
            ["hnsw.ef_search", "recall@10 mean", "worst query", "HNSW top-10 p50 ms"], rows, "lrrr"
        )
    )
    print(f"exact scan (ORDER BY distance + 0): p50 {ms(result.exact_p50)} ms")
    matching = ", ".join(
        f"{kind} p50 {int(np.median(v)):,} / max {max(v):,}" for kind, v in result.matching.items()
    )
    print(f"notes matching a query's words (the BM25 leg's work): {matching}")
    print(f"load average after measuring: {_load()}")
    print(flush=True)


def targets(results: Sequence[Result]) -> None:
    rows = []
    for r in results:
        p95 = Latency.of(r.paths["gql_hybrid"].all()).p95 * 1000
        live = "" if _live(r) else " (semantic leg NOT live: lexical answers)"
        seed = SEED_TARGETS_MS.get(r.size)
        if seed is not None:
            rows.append(
                [
                    f"seed: GraphQL HYBRID p95 < {seed:g} ms",
                    f"{r.size:,}",
                    f"{p95:.2f}{live}",
                    "met" if p95 < seed else "NOT met",
                ]
            )
        if r.size == GOAL_AT:
            rows.append(
                [
                    f"goal: GraphQL HYBRID p95 <= {GOAL_P95_MS:g} ms, with embedding",
                    f"{r.size:,}",
                    f"{p95:.2f}{live}",
                    "met" if p95 <= GOAL_P95_MS and _live(r) else "NOT met",
                ]
            )
        g, s = Latency.of(r.paths["gql_hybrid"].all()), Latency.of(r.paths["sql_fused"].all())
        if _live(r):
            ratio = (g.p50 - Latency.of(r.paths["embed"].all()).p50) / s.p50
            rows.append(
                [
                    f"goal: (GraphQL - embed) / SQL, medians <= {GOAL_RATIO:g}",
                    f"{r.size:,}",
                    f"{ratio:.2f}",
                    "met" if ratio <= GOAL_RATIO else "NOT met",
                ]
            )
        else:
            rows.append(
                [
                    f"goal: (GraphQL - embed) / SQL, medians <= {GOAL_RATIO:g}",
                    f"{r.size:,}",
                    "n/a",
                    "not measurable: semantic leg not live",
                ]
            )
        ef = server_ef(r.size)
        recall_at = r.recall[ef]
        rows.append(
            [
                f"goal: recall@10 >= {GOAL_RECALL:g} at the default ef_search ({ef})",
                f"{r.size:,}",
                f"{recall_at:.3f}",
                "met" if recall_at >= GOAL_RECALL else "NOT met",
            ]
        )
    print(table(["target", "notes", "value", "result"], rows, "lrrl"), flush=True)


# -- the run --------------------------------------------------------------------------------


def _literal(vector: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"  # as SearchService sends it


async def _embed_all(
    backend: InferenceBackend, texts: Sequence[str], batch: int = 64
) -> npt.NDArray[np.float32]:
    parts, started, last = [], time.monotonic(), time.monotonic()
    for start in range(0, len(texts), batch):
        parts.append(await backend.embed(texts[start : start + batch]))
        if time.monotonic() - last >= PROGRESS:
            last = time.monotonic()
            print(f"  sample: {start + batch}/{len(texts)} embedded", flush=True)
    print(f"  sample: {len(texts)} embedded in {time.monotonic() - started:.1f} s", flush=True)
    return np.concatenate(parts)


async def _indexable(db: Database, words: Sequence[str]) -> set[str]:
    """The words English full-text search keeps (not stop words), one per lexeme."""
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT w, (SELECT min(lexeme) FROM unnest(to_tsvector('english', w))) AS lexeme "
            "FROM unnest($1::text[]) WITH ORDINALITY AS t(w, i) ORDER BY i",
            list(words),
        )
    kept: dict[str, str] = {}
    for row in rows:
        if row["lexeme"] is not None:
            kept.setdefault(row["lexeme"], row["w"])
    return set(kept.values())


def _load() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every row."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


async def _pg_settings(db: Database) -> str:
    names = ["shared_buffers", "work_mem", "jit", "max_parallel_workers_per_gather"]
    values = [await db.fetchval(f"SHOW {name}") for name in names]
    version = await db.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    return (
        ", ".join(f"{n} {v}" for n, v in zip(names, values, strict=True)) + f"; pgvector {version}"
    )


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    port, settings, token = stage.port, stage.settings, stage.token
    db, memories = stage.db, stage.memories
    backend = build_backend(settings)  # what the server's runtime builds from the same settings
    model = await backend.embedding_model()
    composition = composition_for(model.name)
    model_dir = settings.local_embed_model_dir or default_model_dir()
    if model_dir is None:
        raise SystemExit("the local model is not installed (its vocabulary is the word list)")
    corpus = Corpus(vocabulary(model_dir), args.seed)
    largest = max(args.sizes)
    notes = corpus.notes(largest)
    indexable = await _indexable(db, list(corpus.words))
    queries = corpus.queries(args.queries, indexable.__contains__)
    sample_size = min(args.sample, min(args.sizes))
    setup += [
        ("load average", _load()),
        ("postgres settings", await _pg_settings(db)),
        (
            "server",
            f"uvicorn, 1 worker in a subprocess, loop {args.loop}, http {args.http}, "
            "access log off, log level warning",
        ),
        (
            "client",
            f"{describe('raw')}, 1 keep-alive connection, sequential; SQL: 1 asyncpg "
            "connection, hnsw.ef_search the server's default for the size "
            f"({', '.join(f'{server_ef(n)} at {n:,}' for n in args.sizes)}); both in the main "
            "process",
        ),
        (
            "embedding",
            f"{backend.name} backend, {model.name}, {model.dimension} dims; "
            f"composition {composition.as_json()}",
        ),
        (
            "data",
            f"sizes {args.sizes}; notes of 60-150 Zipf words in 64 topics, 1 chunk "
            f"each; vectors: {sample_size} real (embedded), the rest synthesised from "
            f"their within-topic covariance; seed {args.seed}",
        ),
        (
            "workload",
            f"{args.queries} queries (half selective, half common), warm-up {args.warmup}, "
            f"blocks of {args.block} alternating the paths and the embedding; limit 10, "
            f"RRF k={RRF_K}, over-fetch {FETCH} notes / {CHUNKS} chunks",
        ),
    ]
    print_setup("benchmarks.search_latency: hybrid search, GraphQL vs SQL, HNSW recall", setup)

    print("embedding the sample and the queries ...", flush=True)
    texts = [composition.document(n.title, n.content, ()) for n in notes[:sample_size]]
    sample = await _embed_all(backend, texts)
    topics = np.array([n.topic for n in notes], dtype=np.int64)
    vectors = synthesize(sample, topics[:sample_size], topics, args.seed)
    probes = []
    for query in queries:
        [vector] = await backend.embed([composition.query(query.text)])
        probes.append(Probe(query, _literal(vector)))

    async def embed(text: str) -> object:
        return await backend.embed([composition.query(text)])

    # Memories and their policies exist before the server starts: it reads policies once
    # and then only when their generation counter moves.
    run = int(time.time())
    names = {size: f"bench_search_{size}_{run}_{random.randrange(10**6)}" for size in args.sizes}
    created: list[str] = []
    results: list[Result] = []
    server = ServerProcess(
        "fortemi", port=port, home=home, urls=urls, loop=args.loop, http=args.http
    )
    try:
        for memory in names.values():
            created.append(await stage.open_memory(memory))
        async with serving(server):
            for size, memory in names.items():
                print(f"loading {size:,} notes into {memory} ...", flush=True)
                ingest, set_id = await load(
                    db, memory, notes[:size], vectors[:size], model.name, composition, args.seed
                )
                print(f"measuring {size:,} (load average {_load()}) ...", flush=True)
                headers = {"authorization": f"Bearer {token}", "x-fortemi-memory": memory}
                result = await _measure_size(
                    args,
                    urls,
                    server,
                    headers,
                    memory,
                    size,
                    set_id,
                    model.dimension,
                    probes,
                    embed,
                )
                result.size, result.ingest = size, ingest
                results.append(result)
                report(result)
                if not args.keep:
                    await memories.delete(memory, confirm=memory)
                    created.remove(memory)
        targets(results)
        if results and not _live(results[-1]):
            print(
                "\nThe semantic leg was not live (see 'degraded' above): the HYBRID rows are "
                "lexical answers, and the ratio with embedding excluded cannot be measured."
            )
    finally:
        await backend.aclose()
        if args.keep:
            print(f"kept: {', '.join(created)} in {home}")
        else:
            for memory in created:
                await memories.delete(memory, confirm=memory)
        await db.close()


async def _measure_size(
    args: argparse.Namespace,
    urls: ServiceUrls,
    server: ServerProcess,
    headers: dict[str, str],
    memory: str,
    size: int,
    set_id: int,
    dimension: int,
    probes: Sequence[Probe],
    embed: Embed,
) -> Result:
    schema = memory_schema(memory)
    sql = await SqlSearch.connect(urls.database, schema, set_id, dimension, server_ef(size))
    api = Api(server.port, headers)
    try:
        paths = await measure(args, probes, api, sql, server, embed, schema)
        matching: dict[str, list[int]] = {k: [] for k in KINDS}
        for probe in probes:
            matching[probe.query.kind].append(await sql.matching(schema, probe.query.text))
        mean, worst, hnsw_p50, exact_p50 = await recall(probes, sql, size)
    finally:
        await api.aclose()
        await sql.close()
    return Result(0, Ingest(), paths, mean, worst, hnsw_p50, exact_p50, matching)


def _sizes(value: str) -> list[int]:
    sizes = [int(part) for part in value.split(",") if part.strip()]
    if not sizes or min(sizes) < 100:
        raise argparse.ArgumentTypeError("sizes are comma-separated counts of at least 100")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.search_latency", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[10_000, 100_000],
        help="notes (= chunks) per run, comma-separated (default 10000,100000)",
    )
    parser.add_argument("--queries", type=int, default=200, help="measured queries per size")
    parser.add_argument("--warmup", type=int, default=10, help="uncounted queries per path")
    parser.add_argument("--block", type=int, default=25, help="queries per alternating block")
    parser.add_argument(
        "--sample",
        type=int,
        default=2000,
        help="notes embedded for real; the rest are synthesised (default 2000)",
    )
    parser.add_argument("--seed", type=int, default=1, help="RNG seed for notes and queries")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the memories (with --home, to inspect them afterwards)",
    )
    server_options(parser)
    args = parser.parse_args(argv)
    if args.queries < 2 or args.warmup < 0 or args.block < 1 or args.sample < 2:
        parser.error("--queries >= 2, --warmup >= 0, --block >= 1, --sample >= 2")
    args.sizes = sorted(set(args.sizes))
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
