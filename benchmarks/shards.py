"""Knowledge shards: export and import of a synthetic memory, beside pg_dump / pg_restore
of the same memory schema, in the same run.

``python -m benchmarks.shards [DATA_DIR] [--notes 10000] [--links-per-note 8] [--dim 384]
[--seed N]``

DATA_DIR (optional): where the embedded PostgreSQL and the archives live (a temporary
folder, removed afterwards, when not given); DATABASE_URL points at an existing server.

Data: ``--notes`` notes of 2-7 sentences (``benchmarks._notes.payloads``) with their
original and version 1; for each, one chunk and its ``--dim`` vector (one embedding set)
and its note vector; ``--links-per-note`` semantic links to random other notes, and
explicit and wiki links for 2 % of the notes each; a vocabulary of 64 concepts, each note
tagged with one. Written by SQL into a fresh memory, then VACUUM ANALYZE.

Measured, best of ``--rounds``:
* shard export: ``ShardService.export`` (full-v1 with vectors) to a file;
* shard import: ``ShardService.import_`` of that file into a fresh empty memory (validation
  pass and the one-transaction write, lexical index rebuilt by the note triggers);
* pg_dump: ``pg_dump -Fc -n <memory schema>`` (zlib at its default level, as the shard's
  gzip) to a file; pg_restore: ``pg_restore`` of it into a fresh database with pgvector,
  the binaries pgserver ships beside its postgres.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import numpy as np

from benchmarks._common import (
    backing_services,
    bench_home,
    common_setup,
    print_setup,
    table,
)
from benchmarks._notes import payloads
from fortemi.documents.shards import ImportOptions, ShardService
from fortemi.platform.database import Database, memory_schema
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations


def _bin(name: str) -> str:
    import pgserver

    path = Path(pgserver.__file__).parent / "pginstall" / "bin" / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"no {name}: install pgserver or put PostgreSQL's binaries on PATH")
    return found


async def _load(db: Database, memory: str, args: argparse.Namespace) -> dict[str, int]:
    rng = random.Random(args.seed)
    vectors = np.random.default_rng(args.seed).standard_normal((args.notes, args.dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    notes = payloads(args.notes, args.seed)
    ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in notes]
    concepts = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(64)]
    scheme = uuid.uuid4()
    async with db.memory_transaction(memory) as conn:
        set_id = await conn.fetchval(
            "INSERT INTO embedding_set (name, model, dimension, composition) "
            "VALUES ('bench', 'bench', $1, '{}') RETURNING id",
            args.dim,
        )
        await conn.executemany(
            "WITH n AS (INSERT INTO note (id, title, content, metadata, tags, content_hash) "
            "VALUES ($1, $2, $3, $4, $5, 'h') RETURNING *), "
            "o AS (INSERT INTO note_original (note_id, content, content_hash, created_at) "
            "SELECT id, content, content_hash, created_at FROM n) "
            "INSERT INTO note_version (note_id, version, title, content, format, metadata, "
            "tags, content_hash, created_at) SELECT id, 1, title, content, format, metadata, "
            "tags, content_hash, created_at FROM n",
            [(i, p.title, p.content, p.metadata, p.tags) for i, p in zip(ids, notes, strict=True)],
        )
        await conn.executemany(
            "WITH c AS (INSERT INTO chunk (note_id, ordinal, text, start_offset, end_offset, "
            "content_hash) VALUES ($1, 0, $2, 0, length($2), 'h') RETURNING id) "
            "INSERT INTO chunk_embedding (set_id, chunk_id, note_id, text_hash, embedding) "
            "SELECT $3, c.id, $1, 'h', $4::real[]::vector FROM c",
            [
                (i, p.content, set_id, v.astype(np.float32).tolist())
                for i, p, v in zip(ids, notes, vectors, strict=True)
            ],
        )
        await conn.execute(
            "INSERT INTO note_embedding (set_id, note_id, embedding) "
            "SELECT set_id, note_id, embedding FROM chunk_embedding"
        )
        await conn.execute("INSERT INTO concept_scheme (id, title) VALUES ($1, 'bench')", scheme)
        await conn.executemany(
            "INSERT INTO concept (id, scheme_id) VALUES ($1, $2)", [(c, scheme) for c in concepts]
        )
        await conn.executemany(
            "INSERT INTO concept_label (concept_id, kind, lang, label) VALUES ($1, 'pref', '', $2)",
            [(c, f"concept {n}") for n, c in enumerate(concepts)],
        )
        await conn.executemany(
            "INSERT INTO note_concept (note_id, concept_id, source) VALUES ($1, $2, 'import')",
            [(i, rng.choice(concepts)) for i in ids],
        )
        links = set()
        for n, source in enumerate(ids):
            for target in rng.sample(ids, args.links_per_note):
                if target != source:
                    links.add((source, target, "semantic"))
            if n % 50 == 0:
                links.add((source, rng.choice(ids), "explicit"))
            if n % 50 == 25:
                links.add((source, rng.choice(ids), "wiki"))
        await conn.executemany(
            "INSERT INTO note_link (source_id, target_id, kind, score, set_id) "
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            [
                (s, t, k, round(rng.uniform(0.7, 0.98), 4), set_id if k == "semantic" else None)
                for s, t, k in links
                if s != t
            ],
        )
    async with db.connection() as conn:
        await conn.execute(f"VACUUM ANALYZE {memory_schema(memory)}.note")
    counts = {}
    async with db.memory_transaction(memory) as conn:
        for name in ("note", "note_version", "chunk_embedding", "note_link", "note_concept"):
            counts[name] = await conn.fetchval(f"SELECT count(*) FROM {name}")  # noqa: S608
    return counts


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)  # noqa: S603 - fixed argv
    return time.perf_counter() - start


async def _run(args: argparse.Namespace, folder: Path) -> None:
    with backing_services(folder) as (urls, embedded):
        setup = await common_setup(urls, embedded, folder)
        db = await Database.connect(urls.database, max_size=4)
        memories = MemoryService(db, Migrations())
        try:
            await Migrations().migrate_shared(db)
            source = f"bench_shard_{uuid.uuid4().hex[:6]}"
            await memories.create(source, created_by="bench")
            started = time.perf_counter()
            counts = await _load(db, source, args)
            setup.append(("data", ", ".join(f"{v:,} {k}" for k, v in counts.items())))
            setup.append(("load", f"{time.perf_counter() - started:.1f} s by SQL"))
            print_setup("Knowledge shards: export/import vs pg_dump/pg_restore", setup)
            shards = ShardService(db)
            shard, dump = folder / "bench.shard", folder / "bench.dump"
            rows: list[tuple[str, float, float]] = []
            export_s, import_s, dump_s, restore_s = [], [], [], []
            for round_ in range(args.rounds):
                started = time.perf_counter()
                with shard.open("wb") as sink:
                    await shards.export(source, sink, profile="full-v1")
                export_s.append(time.perf_counter() - started)
                target = f"bench_shard_in_{uuid.uuid4().hex[:6]}"
                await memories.create(target, created_by="bench")
                started = time.perf_counter()
                await shards.import_(target, shard, ImportOptions())
                import_s.append(time.perf_counter() - started)
                await memories.delete(target, confirm=target)
                schema = memory_schema(source).strip('"')
                dump_s.append(
                    _timed([_bin("pg_dump"), "-Fc", "-n", schema, "-f", str(dump), urls.database])
                )
                restored = f"bench_restore_{round_}_{uuid.uuid4().hex[:6]}"
                async with db.connection() as conn:
                    await conn.execute(f'CREATE DATABASE "{restored}"')
                dsn = _database_url(urls.database, restored)
                other = await Database.connect(dsn, min_size=1, max_size=1)
                try:
                    await other.fetchval("CREATE EXTENSION IF NOT EXISTS vector")
                finally:
                    await other.close()
                restore_s.append(_timed([_bin("pg_restore"), "-d", dsn, str(dump)]))
                async with db.connection() as conn:
                    await conn.execute(f'DROP DATABASE "{restored}" WITH (FORCE)')
            rows = [
                ("export (shard) vs pg_dump", min(export_s), min(dump_s)),
                ("import (shard) vs pg_restore", min(import_s), min(restore_s)),
            ]
            print(
                table(
                    ["operation", "shard s", "pg s", "ratio"],
                    [(n, f"{a:.2f}", f"{b:.2f}", f"{a / b:.2f}x") for n, a, b in rows],
                    "lrrr",
                )
            )
            size_shard, size_dump = shard.stat().st_size, dump.stat().st_size
            print(
                f"\nsizes: shard {size_shard / 2**20:.1f} MiB, pg_dump -Fc "
                f"{size_dump / 2**20:.1f} MiB ({size_shard / size_dump:.2f}x); "
                f"best of {args.rounds} round(s)"
            )
            await memories.delete(source, confirm=source)
        finally:
            await db.close()


def _database_url(url: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", help="services and archives here (default: temp)")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--links-per-note", type=int, default=8)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with bench_home(args.data_dir) as folder:
        asyncio.run(_run(args, folder))


if __name__ == "__main__":
    main()
