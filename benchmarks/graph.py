"""Graph figures: traversal (``graph``, depth 3, maxNodes 200) through HTTP GraphQL beside
the same recursive SQL sent straight to PostgreSQL, on a synthetic memory and on SciFact.

``python -m benchmarks.graph [--notes 10000] [--links 100000] [--scifact DIR]
[--starts 200] [--home DIR] [--seed N]``

Data. Synthetic: ``--notes`` notes in 64 topics; ``--links`` candidate semantic link rows
(each note's nearest notes, 90 % inside its topic, written both ways as the Linking job
writes them, scores 0.70-0.98), of which a third are marked pruned as PFNET would leave
them, plus explicit and wiki links (2 % of the notes each). SciFact (``--scifact``, the
BEIR folder: ``corpus.jsonl``): one note per abstract, and as semantic links each
abstract's 10 nearest by cosine over hashed TF-IDF vectors (2**12 dimensions), both ways;
the graph's shape is what traversal timings depend on, and this needs no model. Both go
straight into a fresh memory's tables (COPY), then VACUUM ANALYZE.

Paths, one request at a time from random start notes, in alternating blocks so both see
the same caches:

* GraphQL ``graph(noteId, depth: 3, maxNodes: 200)`` with every field, over HTTP with a
  bearer token, one keep-alive connection, to a uvicorn subprocess (the real app);
* SQL: the service's recursive statement (the walk and the edges among the returned nodes,
  in one statement) over one asyncpg connection with the memory's search path, no
  transaction. The server answers from the memory's traversal segment once it has built
  it (``fortemi.graph.traversal.segment``: the links in RAM, checked against changes in
  the query's snapshot), so measuring starts once a walk reports ``meta.path`` segment;
  ``--no-segment`` serves every walk by the statement instead. The report counts which
  reader answered each measured walk;
* the GraphQL floor: ``note(id) { id }`` for the same start, on the same connection as
  ``graph``: the token check, routing, the read decision and its audit record, a memory
  transaction and one statement, with the least to answer. ``graph`` cannot cost less; the
  report prints the GraphQL / SQL ratio that floor alone would give.

Hooks: :func:`linking_rows` and :func:`maintenance_rows` return table rows for the Linking
job's per-note time and a full maintenance run; they report "not measured" until those
features are wired here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import blake3
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
from fortemi.graph.traversal.repository import TraversalRepository, walk_statement
from fortemi.graph.traversal.segment import GraphSegment
from fortemi.graph.traversal.segment_repository import build as build_segment
from fortemi.platform.database import Database, memory_schema
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes.models import NameSet, NoteVisibility

__all__ = ["linking_rows", "main", "maintenance_rows"]

DEPTH, MAX_NODES = 3, 200
GOAL_P95_MS, GOAL_RATIO = 20.0, 1.5
TOPICS = 64
_BATCH = 5000

_GRAPH = (
    "query Graph($id: ID!) { graph(noteId: $id, depth: 3, maxNodes: 200) { graphVersion "
    "nodes { id title depth archived createdAt updatedAt community communityLabel "
    "communityConfidence } edges { source target edgeType score rank embeddingSet model "
    "computedAt bidirectional } meta { totalNodes totalEdges truncatedNodes truncatedEdges "
    "totalsExact parameters { depth maxNodes minScore maxEdgesPerNode } clamped "
    "truncationReasons path } } }"
)

# The read scope of an editor under the benchmark's open memory policy: every note.
_EVERYONE = NoteVisibility(
    memory_notes=True, projects=NameSet(only=False), skills=NameSet(only=False)
)


@dataclass(frozen=True, slots=True)
class Corpus:
    name: str
    titles: list[str]
    links: list[tuple[int, int, str, float, bool]]  # source, target, kind, score, pruned


@dataclass
class Samples:
    gql: list[float] = field(default_factory=list)
    sql: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)  # note(id) { id }, same connection
    segment: list[float] = field(default_factory=list)  # the segment path's work, raw
    nodes: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    paths: Counter[str] = field(default_factory=Counter)  # which reader walked (meta.path)
    server_cpu: float = 0.0  # the server process's CPU seconds over the measured requests


# -- data -----------------------------------------------------------------------------------


def synthetic(notes: int, links: int, seed: int) -> Corpus:
    """Topic-clustered nearest-neighbour links, both ways, a third pruned."""
    rng = random.Random(seed)
    topic = [i % TOPICS for i in range(notes)]
    members: dict[int, list[int]] = {}
    for i, t in enumerate(topic):
        members.setdefault(t, []).append(i)
    pairs: dict[tuple[int, int], float] = {}
    extra = 2 * (notes // 50)  # the explicit and wiki links below
    # Round-robin over the notes so every one gets its share of neighbours.
    i = 0
    while 2 * len(pairs) + extra < links:
        pool = members[topic[i]] if rng.random() < 0.9 else range(notes)
        j = rng.choice(pool)
        if j != i:
            pairs[(min(i, j), max(i, j))] = round(rng.uniform(0.70, 0.98), 4)
        i = (i + 1) % notes
    rows: list[tuple[int, int, str, float, bool]] = []
    for (i, j), score in pairs.items():
        pruned = rng.random() < 1 / 3
        rows += [(i, j, "semantic", score, pruned), (j, i, "semantic", score, pruned)]
    for kind in ("explicit", "wiki"):
        for _ in range(notes // 50):
            i, j = rng.randrange(notes), rng.randrange(notes)
            if i != j:
                rows.append((i, j, kind, 1.0, False))
    unique = {(s, t, k): (s, t, k, sc, p) for s, t, k, sc, p in rows}
    return Corpus(
        f"synthetic {notes:,} notes", [f"note {i} topic {topic[i]}" for i in range(notes)],
        list(unique.values()),
    )  # fmt: skip


_WORD = re.compile(r"[a-z][a-z0-9-]{2,}")


def _hashed_tfidf(texts: Sequence[str], dims: int) -> npt.NDArray[np.float32]:
    counts = [Counter(_WORD.findall(text.lower())) for text in texts]
    df: Counter[str] = Counter(word for c in counts for word in c)
    matrix = np.zeros((len(texts), dims), dtype=np.float32)
    for row, c in enumerate(counts):
        for word, tf in c.items():
            idf = math.log(len(texts) / df[word])
            matrix[row, zlib.crc32(word.encode()) % dims] += (1 + math.log(tf)) * idf
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalised: npt.NDArray[np.float32] = (matrix / np.maximum(norms, 1e-9)).astype(np.float32)
    return normalised


def scifact(folder: Path, k: int = 10) -> Corpus:
    """SciFact's abstracts, each linked to its ``k`` nearest by hashed TF-IDF cosine."""
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").open()]
    vectors = _hashed_tfidf([f"{d['title']} {d['text']}" for d in docs], 2**12)
    rows: dict[tuple[int, int], float] = {}
    for start in range(0, len(docs), 512):
        sims = vectors[start : start + 512] @ vectors.T
        for offset, row in enumerate(sims):
            i = start + offset
            row[i] = -1.0
            for j in np.argpartition(-row, k)[:k]:
                score = float(np.clip(row[j], 0.0, 1.0))
                rows[(i, int(j))] = max(rows.get((i, int(j)), 0.0), score)
                rows[(int(j), i)] = max(rows.get((int(j), i), 0.0), score)
    links = [(i, j, "semantic", round(s, 4), False) for (i, j), s in rows.items()]
    return Corpus(f"SciFact {len(docs):,} abstracts", [d["title"][:200] for d in docs], links)


async def load(db: Database, memory: str, corpus: Corpus, seed: int) -> list[UUID]:
    rng = random.Random(seed)
    ids = [UUID(int=rng.getrandbits(128), version=4) for _ in corpus.titles]
    for start in range(0, len(ids), _BATCH):
        rows = [
            (ids[i], title, title, "blake3:" + blake3.blake3(title.encode()).hexdigest(),
             "bench", "bench")
            for i, title in enumerate(corpus.titles[start : start + _BATCH], start)
        ]  # fmt: skip
        async with db.memory_transaction(memory) as conn:
            await conn.copy_records_to_table(
                "note",
                records=rows,
                columns=["id", "title", "content", "content_hash", "created_by", "updated_by"],
            )
    async with db.memory_transaction(memory) as conn:
        await conn.copy_records_to_table(
            "note_link",
            records=[
                (ids[s], ids[t], kind, score, pruned, "bench")
                for s, t, kind, score, pruned in corpus.links
            ],
            columns=["source_id", "target_id", "kind", "score", "pruned", "model"],
        )
    async with db.connection() as conn:
        await conn.execute(f"VACUUM ANALYZE {memory_schema(memory)}.note")
        await conn.execute(f"VACUUM ANALYZE {memory_schema(memory)}.note_link")
    return ids


# -- measuring ------------------------------------------------------------------------------


class RawSql:
    """The service's statement, on one connection with the memory's search path."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    @classmethod
    async def connect(cls, dsn: str, memory: str) -> RawSql:
        conn = await asyncpg.connect(dsn)
        await conn.execute(f"SET search_path TO {memory_schema(memory)}, public")
        return cls(conn)

    async def neighbourhood(self, start: UUID) -> int:
        """The walk and the edges among its nodes (one row of arrays): how many nodes and
        edges."""
        # concepts: the GraphQL query selects communityLabel, for which the service runs
        # the statement that also reads the nodes' concepts and their labels.
        sql, args = walk_statement(
            start, depth=DEPTH, max_nodes=MAX_NODES, min_score=0.0, max_edges_per_node=None,
            gamma=1.0, visibility=_EVERYONE, concepts=True,
        )  # fmt: skip
        row = await self._conn.fetchrow(sql, *args)
        return 0 if row is None else len(row["ids"]) + len(row["sources"] or ())

    async def segment(self) -> GraphSegment:
        """The memory's traversal segment, built on this connection as the server builds
        it (one REPEATABLE READ transaction)."""
        async with self._conn.transaction(isolation="repeatable_read"):
            return await build_segment(self._conn, 1.0)

    async def segment_neighbourhood(self, segment: GraphSegment, start: UUID) -> int:
        """The segment path's work without GraphQL: the walk and its edges from the arrays,
        then its one statement (the change check and the nodes' columns, concepts and
        labels), as the service does it. How many nodes and edges."""
        readable = segment.readable(_EVERYONE)
        walk = segment.walk(
            segment.index[start], readable, depth=DEPTH, max_nodes=MAX_NODES, min_score=0.0
        )
        edges = segment.edges(walk.nodes, 0.0)
        ids = list(map(segment.ids.__getitem__, walk.nodes.tolist()))
        read = await _REPOSITORY.segment_read(
            self._conn,
            ids,
            since=str(segment.snapshot),
            xmin=segment.snapshot.xmin,
            visibility=_EVERYONE,
            concepts=True,
        )
        if read.changed or read.ids != ids:
            raise RuntimeError("the memory changed while it was measured")
        return len(ids) + len(edges.rows)

    async def close(self) -> None:
        await self._conn.close()


_REPOSITORY = TraversalRepository()
_FLOOR = "query Floor($id: ID!) { note(id: $id) { id } }"


async def _gql(
    poster: RawPoster, start: UUID, document: str = _GRAPH
) -> tuple[float, dict[str, Any]]:
    body = json.dumps({"query": document, "variables": {"id": to_global_id("Note", start)}})
    started = time.perf_counter()
    status, content = await poster.post(body.encode())
    elapsed = time.perf_counter() - started
    result: dict[str, Any] = json.loads(content)
    if status != 200 or result.get("errors"):
        raise RuntimeError(f"graph failed ({status}): {result}")
    answer: dict[str, Any] = result["data"]
    return elapsed, answer.get("graph", answer)


async def measure(
    server: ServerProcess,
    headers: dict[str, str],
    sql: RawSql,
    starts: Sequence[UUID],
    warmup: int,
    segments: bool,
) -> Samples:
    port = server.port
    samples = Samples()
    segment = await sql.segment() if segments else None
    head = {**headers, "content-type": "application/json"}
    for start in starts[:warmup]:
        poster = await RawPoster.open(HOST, port, head)
        await _gql(poster, start)
        await _gql(poster, start, _FLOOR)
        await poster.aclose()
        await sql.neighbourhood(start)
    # The first walks of a memory start its traversal segment's build in the server; they
    # and every walk until it is ready are the recursive statement's. Measured from then on,
    # as a server that has been walking a memory answers.
    poster = await RawPoster.open(HOST, port, head)
    try:
        for _ in range(600):
            if (await _gql(poster, starts[0]))[1]["meta"]["path"] == "segment" or not segments:
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError("the server's traversal segment was not ready within a minute")
    finally:
        await poster.aclose()
    for block in range(0, len(starts), 25):
        chosen = starts[block : block + 25]
        poster = await RawPoster.open(HOST, port, head)  # uvicorn closes idle connections
        cpu = server.cpu_seconds()
        try:
            for start in chosen:
                took, graph = await _gql(poster, start)
                samples.gql.append(took)
                samples.paths[graph["meta"]["path"]] += 1
                samples.nodes.append(len(graph["nodes"]))
                samples.edges.append(len(graph["edges"]))
        finally:
            samples.server_cpu += server.cpu_seconds() - cpu
        try:  # the floor after the block, so the server CPU above is graph's alone
            for start in chosen:
                samples.floor.append((await _gql(poster, start, _FLOOR))[0])
        finally:
            await poster.aclose()
        for start in chosen:
            began = time.perf_counter()
            await sql.neighbourhood(start)
            samples.sql.append(time.perf_counter() - began)
        if segment is not None:
            for start in chosen:
                began = time.perf_counter()
                await sql.segment_neighbourhood(segment, start)
                samples.segment.append(time.perf_counter() - began)
    return samples


# -- hooks for the other graph figures ----------------------------------------------------


def linking_rows(corpus: Corpus) -> list[list[str]]:
    """The Linking job's time per note, excluding embedding (goal <= 50 ms)."""
    return [["linking per note (excl. embedding)", corpus.name, "not measured here", ""]]


def maintenance_rows(corpus: Corpus) -> list[list[str]]:
    """Full maintenance (normalise, SNN, PFNET, Louvain, snapshot) beside networkx
    Louvain alone on the same graph (goal <= 10 s at 10k notes)."""
    return [["full maintenance", corpus.name, "not measured here", ""]]


# -- reporting ------------------------------------------------------------------------------


def report(corpus: Corpus, samples: Samples) -> None:
    rows = []
    for label, values in (
        ("GraphQL graph(depth 3, maxNodes 200), HTTP", samples.gql),
        ("SQL: the recursive statement (walk + edges), raw", samples.sql),
        ("GraphQL floor: note(id) { id }, HTTP", samples.floor),
        ("segment path raw: walk in RAM + its statement", samples.segment),
    ):
        if not values:
            continue
        lat = Latency.of(values)
        rows.append([label, str(lat.count), ms(lat.p50), ms(lat.p95), ms(lat.p99), ms(lat.mean)])
    print(f"## {corpus.name}, {len(corpus.links):,} link rows")
    print(table(["path", "n", "p50 ms", "p95 ms", "p99 ms", "mean ms"], rows, "lrrrrr"))
    nodes, edges = np.array(samples.nodes), np.array(samples.edges)
    print(
        f"returned nodes: median {int(np.median(nodes))}, min {nodes.min()}, max {nodes.max()}; "
        f"edges: median {int(np.median(edges))}, max {edges.max()}"
    )
    print(
        "GraphQL walks answered by: "
        + ", ".join(f"{path} {count}" for path, count in sorted(samples.paths.items()))
    )
    # psutil's clock-tick resolution (10 ms) is small beside 25 requests a block.
    print(
        f"server CPU per GraphQL request (the uvicorn process, user + system): "
        f"{samples.server_cpu / len(samples.gql) * 1000:.2f} ms"
    )
    g, s, f = Latency.of(samples.gql), Latency.of(samples.sql), Latency.of(samples.floor)
    p95 = g.p95 * 1000
    targets = [
        ["GraphQL p95 <= 20 ms", corpus.name, f"{p95:.2f}",
         "met" if p95 <= GOAL_P95_MS else "NOT met"],
        ["GraphQL / SQL p50", corpus.name, f"{g.p50 / s.p50:.2f}x",
         "met" if g.p50 / s.p50 <= GOAL_RATIO else "NOT met"],
        ["GraphQL / SQL p95", corpus.name, f"{g.p95 / s.p95:.2f}x", ""],
        ["(floor p50 + SQL p50) / SQL p50", corpus.name, f"{(f.p50 + s.p50) / s.p50:.2f}x",
         "about the least the ratio can be"],
        *([["GraphQL / segment path raw, p50", corpus.name,
            f"{g.p50 / Latency.of(samples.segment).p50:.2f}x",
            "what GraphQL adds to its own path's work"]] if samples.segment else []),
        *linking_rows(corpus),
        *maintenance_rows(corpus),
    ]  # fmt: skip
    print(table(["figure", "data", "value", "goal"], targets, "llrl"))
    print(flush=True)


# -- the run --------------------------------------------------------------------------------


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    corpora = [synthetic(args.notes, args.links, args.seed)]
    if args.scifact is not None:
        corpora.append(scifact(Path(args.scifact)))
    setup += [
        ("server", f"uvicorn, 1 worker in a subprocess, loop {args.loop}, http {args.http}"),
        ("client", f"{describe('raw')}, 1 keep-alive connection, sequential; SQL: 1 asyncpg "
                   "connection, search_path set once, no transaction"),
        ("workload", f"{args.starts} random start notes per corpus (warm-up {args.warmup}), "
                     f"depth {DEPTH}, maxNodes {MAX_NODES}, blocks of 25 alternating paths"),
        ("data", "; ".join(f"{c.name}: {len(c.links):,} link rows" for c in corpora)),
    ]  # fmt: skip
    print_setup("benchmarks.graph: traversal through GraphQL vs the same SQL", setup)
    created: list[str] = []
    names = [f"bench_graph_{i}_{random.randrange(10**6)}" for i in range(len(corpora))]
    server = ServerProcess(
        "fortemi", port=stage.port, home=home, urls=urls, loop=args.loop, http=args.http
    )
    try:
        for name in names:
            created.append(await stage.open_memory(name))
        async with serving(server):
            for corpus, memory in zip(corpora, names, strict=True):
                print(f"loading {corpus.name} into {memory} ...", flush=True)
                ids = await load(stage.db, memory, corpus, args.seed)
                starts = random.Random(args.seed).sample(ids, min(len(ids), args.starts))
                sql = await RawSql.connect(urls.database, memory)
                headers = {"authorization": f"Bearer {stage.token}", "x-fortemi-memory": memory}
                try:
                    samples = await measure(
                        server, headers, sql, starts, args.warmup, not args.no_segment
                    )
                finally:
                    await sql.close()
                report(corpus, samples)
    finally:
        for memory in created:
            await stage.memories.delete(memory, confirm=memory)
        await stage.db.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.graph", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--notes", type=int, default=10_000, help="synthetic notes")
    parser.add_argument("--links", type=int, default=100_000, help="synthetic link rows")
    parser.add_argument("--scifact", help="SciFact's BEIR folder (corpus.jsonl)")
    parser.add_argument("--starts", type=int, default=200, help="measured start notes")
    parser.add_argument("--warmup", type=int, default=10, help="uncounted starts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    parser.add_argument(
        "--no-segment",
        action="store_true",
        help="serve with FORTEMI_GRAPH_SEGMENT_LINKS=0: every walk is the recursive statement",
    )
    server_options(parser)
    args = parser.parse_args(argv)
    if args.notes < 10 or args.links < args.notes or args.starts < 2:
        parser.error("--notes >= 10, --links >= --notes, --starts >= 2")
    if args.no_segment:
        os.environ["FORTEMI_GRAPH_SEGMENT_LINKS"] = "0"  # the server inherits it
    loop_factory, _ = client_loop_factory()
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
