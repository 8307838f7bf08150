"""Automatic linking per note and full graph maintenance on a synthetic memory.

``python -m benchmarks.graph_maintenance [--notes 10000] [--sample 200] [--home DIR]
[--maintenance-only]``

Synthetic notes: ``--notes`` unit vectors (384 dimensions, MiniLM's) drawn around 100
topic centres (cosine to their centre about 0.8), fixed seed. Each note has one chunk
whose vector is the note's, so its note vector is that vector too.

* **pure**: the algorithms alone on numpy/networkx, as :mod:`fortemi.graph` runs them:
  exact top-10 neighbours per note (about 10 candidate links per note), HNSW-heuristic
  selection per note, then the full maintenance plan (SNN, PFNET, Louvain, metrics) over
  the selected links plus the candidate links; the baseline is networkx Louvain alone on
  the same graph.
* **database**: the same notes in a memory of the embedded PostgreSQL; ``--sample``
  notes linked through :class:`NoteLinker` (note vector, HNSW candidates, concept-free
  scoring, selection, link rows: everything but embedding), then
  :meth:`GraphMaintenance.run` with every step (read, plan, write, snapshot).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from uuid import UUID, uuid4

import networkx as nx
import numpy as np
import numpy.typing as npt

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
from fortemi.graph.linking.repository import LinkingRepository
from fortemi.graph.linking.selection import Candidate, adaptive_k, select_links
from fortemi.graph.linking.service import NoteLinker
from fortemi.graph.maintenance.algorithms import Pair, knn_sets, pair
from fortemi.graph.maintenance.plan import GraphState, MaintenanceSettings, Step, plan_maintenance
from fortemi.graph.maintenance.service import GraphMaintenance
from fortemi.platform.notes import NoteDraft, NoteService
from fortemi.retrieval.repository import ChunkEmbedding, NewChunk, RetrievalRepository
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSets

DIMENSION, TOPICS, CANDIDATES = 384, 100, 10


def synthetic_vectors(count: int, seed: int = 12) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(TOPICS, DIMENSION))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic = rng.integers(0, TOPICS, size=count)
    noise = rng.normal(size=(count, DIMENSION))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = centres[topic] * 0.8 + noise * 0.6
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def pure(
    vectors: npt.NDArray[np.float32],
) -> tuple[list[list[str]], list[tuple[int, int, float]]]:
    """The pure figures, and the semantic links (row positions, score) they worked on."""
    n = vectors.shape[0]
    ids = [UUID(int=i + 1) for i in range(n)]
    started = time.perf_counter()
    neighbours = knn_sets(vectors, CANDIDATES)
    knn_seconds = time.perf_counter() - started
    k = adaptive_k(n)
    selection: list[float] = []
    semantic: dict[Pair, float] = {}
    for i in range(n):
        candidates = [Candidate(ids[j], vectors[j]) for j in sorted(neighbours[i])]
        began = time.perf_counter()
        chosen = select_links(vectors[i], candidates, k=k, min_score=0.7)
        selection.append(time.perf_counter() - began)
        for link in chosen:
            semantic[pair(ids[i], link.note_id)] = link.score
    # The candidate links too: maintenance sees a dense graph to prune (~100k links).
    for i in range(n):
        for j in neighbours[i]:
            key = pair(ids[i], ids[j])
            semantic.setdefault(key, float(np.dot(vectors[i], vectors[j])))
    state = GraphState(notes=ids, vectors={ids[i]: vectors[i] for i in range(n)}, semantic=semantic)
    began = time.perf_counter()
    plan = plan_maintenance(state, list(Step), MaintenanceSettings())
    plan_seconds = time.perf_counter() - began
    # The baseline: networkx Louvain alone on the same weighted graph (integer nodes, the
    # same seed), nothing else.
    position = {note: i for i, note in enumerate(ids)}
    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from((position[a], position[b], s) for (a, b), s in semantic.items())
    began = time.perf_counter()
    baseline = nx.community.louvain_communities(graph, weight="weight", seed=12)
    louvain_seconds = time.perf_counter() - began
    modularity = nx.community.modularity(graph, baseline, weight="weight")
    select = Latency.of(selection)
    snn = plan.metrics.get("snn", {})
    links = [(position[a], position[b], score) for (a, b), score in semantic.items()]
    return [
        ["exact top-10 neighbours (all notes)", ms(knn_seconds), ""],
        ["selection per note (p50 / p95)", f"{ms(select.p50)} / {ms(select.p95)}", ""],
        [
            f"full maintenance plan, {len(semantic)} links",
            ms(plan_seconds),
            f"SNN {snn.get('status')} (kept {snn.get('edgesAfter')}, "
            f"{snn.get('ms')} ms), "
            f"PFNET {plan.metrics.get('pfnet', {}).get('ms')} ms, "
            f"Louvain {plan.metrics['communities']['ms']} ms; "
            f"PFNET kept {plan.metrics.get('pfnet', {}).get('edgesAfter')}, "
            f"{plan.metrics['communities']['count']} communities, "
            f"Q {plan.metrics['communities']['modularity']:.3f}",
        ],
        [
            "baseline: networkx Louvain alone, same graph",
            ms(louvain_seconds),
            f"{len(baseline)} communities, Q {modularity:.3f}",
        ],
    ], links


async def _populate(
    stage: Stage, memory: str, vectors: npt.NDArray[np.float32]
) -> tuple[list[UUID], int]:
    notes = NoteService(stage.db, max_note_bytes=1 << 20, max_page_size=100, max_upsert_batch=500)
    ids: list[UUID] = []
    for start in range(0, len(vectors), 50):
        batch = range(start, min(start + 50, len(vectors)))
        created = await asyncio.gather(
            *(notes.create(memory, NoteDraft(title=f"note {i}"), actor="bench") for i in batch)
        )
        ids.extend(note.id for note in created)
    chunks = RetrievalRepository()
    linking = LinkingRepository()
    async with stage.db.memory_transaction(memory) as conn:
        chosen = await EmbeddingSets().ensure(conn, "synthetic", DIMENSION, DocumentComposition())
        rows = []
        for note_id, vector in zip(ids, vectors, strict=True):
            [chunk_id] = await chunks.replace_chunks(
                conn, note_id, uuid4().hex, [NewChunk(0, "", 0, 0, None)]
            )
            rows.append(ChunkEmbedding(chosen.id, chunk_id, note_id, "h", vector))
        await chunks.upsert_embeddings(conn, chosen, rows)
        await conn.executemany(
            "INSERT INTO note_embedding (set_id, note_id, embedding) VALUES ($1, $2, $3)",
            [(chosen.id, n, v) for n, v in zip(ids, vectors, strict=True)],
        )
        await linking.ensure_index(conn, chosen.id, DIMENSION)
    return ids, chosen.id


async def _populate_for_maintenance(
    stage: Stage, memory: str, vectors: npt.NDArray[np.float32]
) -> tuple[list[UUID], int]:
    """What maintenance reads and nothing more, for quick runs: notes by COPY and their
    note vectors (no chunks, no HNSW index, so no linking)."""
    ids = [uuid4() for _ in range(len(vectors))]
    async with stage.db.memory_transaction(memory) as conn:
        await conn.copy_records_to_table(
            "note",
            records=[(i, f"note {n}", "", "blake3:-", "bench", "bench") for n, i in enumerate(ids)],
            columns=["id", "title", "content", "content_hash", "created_by", "updated_by"],
        )
        chosen = await EmbeddingSets().ensure(conn, "synthetic", DIMENSION, DocumentComposition())
        await conn.executemany(
            "INSERT INTO note_embedding (set_id, note_id, embedding) VALUES ($1, $2, $3)",
            [(chosen.id, n, v) for n, v in zip(ids, vectors, strict=True)],
        )
    return ids, chosen.id


async def _link_row_counts(stage: Stage, memory: str) -> dict[str, int]:
    """note_link's row counters (updates, HOT updates, deletions) from PostgreSQL."""
    async with stage.db.memory_transaction(memory) as conn:
        row = await conn.fetchrow(
            "SELECT n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables "
            "WHERE relname = 'note_link' AND schemaname = current_schema()"
        )
    if row is None:
        return {"updated": 0, "hot": 0, "deleted": 0}
    return {"updated": row[0], "hot": row[1], "deleted": row[2]}


async def database(args: argparse.Namespace, vectors: npt.NDArray[np.float32]) -> None:
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        stage = await Stage.prepare(home, urls)
        try:
            setup = await common_setup(urls, embedded, home)
            setup.append(("notes", f"{len(vectors)} synthetic, {DIMENSION} dimensions"))
            # The machine may be shared: its load says how far the figures are from idle.
            setup.append(
                ("load", " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min)")
            )
            print_setup("graph maintenance: linking and maintenance", setup)
            rows, candidate_links = pure(vectors)
            print("## pure algorithms")
            print(table(["what", "time", "result"], rows, "<><"))
            print(flush=True)
            memory = await stage.open_memory()
            began = time.perf_counter()
            timings: list[float] = []
            if args.maintenance_only:
                ids, set_id = await _populate_for_maintenance(stage, memory, vectors)
                populate = time.perf_counter() - began
            else:
                ids, set_id = await _populate(stage, memory, vectors)
                populate = time.perf_counter() - began
                linker = NoteLinker(stage.db)
                for note_id in random.Random(12).sample(ids, min(args.sample, len(ids))):
                    began = time.perf_counter()
                    await linker.link(memory, note_id, set_id)
                    timings.append(time.perf_counter() - began)
            # Maintenance gets the pure part's graph: every note's selected links and its
            # top-10 candidates, as semantic rows.
            async with stage.db.memory_transaction(memory) as conn:
                await conn.executemany(
                    "INSERT INTO note_link (source_id, target_id, kind, score) "
                    "VALUES ($1, $2, 'semantic', $3) ON CONFLICT DO NOTHING",
                    [
                        (ids[x], ids[y], max(0.0, min(1.0, s)))
                        for a, b, s in candidate_links
                        for x, y in ((a, b), (b, a))
                    ],
                )
            per_note = Latency.of(timings or [0.0])
            maintenance = GraphMaintenance(stage.db)
            rows_before = await _link_row_counts(stage, memory)
            began = time.perf_counter()
            report = await maintenance.run(memory, list(Step), allow_aggressive_pruning=True)
            full = time.perf_counter() - began
            # PostgreSQL publishes a backend's table statistics within a second or so.
            await asyncio.sleep(2.0)
            rows_after = await _link_row_counts(stage, memory)
            written = {key: rows_after[key] - rows_before[key] for key in rows_after}
            steps = report.metrics
            print("## through PostgreSQL")
            print(
                table(
                    ["what", "time", "goal"],
                    [
                        [
                            "populate (notes and note vectors only)"
                            if args.maintenance_only
                            else "populate (notes, chunks, vectors, HNSW)",
                            ms(populate),
                            "",
                        ],
                        *(
                            []
                            if args.maintenance_only
                            else [
                                [
                                    f"linking per note, {len(timings)} notes (p50 / p95)",
                                    f"{ms(per_note.p50)} / {ms(per_note.p95)}",
                                    "<= 50 ms",
                                ]
                            ]
                        ),
                        [
                            f"full maintenance ({report.metrics['edgesBefore']} links)",
                            ms(full),
                            "<= 10 s at 10k notes",
                        ],
                    ],
                    "<><",
                )
            )
            print(
                f"of which exact kNN {steps['snn'].get('knnMs')} ms (beside reading the "
                f"links), SNN {steps['snn'].get('ms')} ms, PFNET {steps['pfnet']['ms']} ms, "
                f"Louvain {steps['communities']['ms']} ms (beside the link writes); "
                f"note_link rows: {written['updated']} updated "
                f"({written['hot']} HOT), {written['deleted']} deleted"
            )
        finally:
            await stage.db.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph_maintenance")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--home", default=None)
    parser.add_argument(
        "--maintenance-only",
        action="store_true",
        help="populate only what maintenance reads (by COPY, about a minute less) and "
        "skip linking: a quick loop for maintenance",
    )
    args = parser.parse_args()
    asyncio.run(database(args, synthetic_vectors(args.notes)))


if __name__ == "__main__":
    main()
