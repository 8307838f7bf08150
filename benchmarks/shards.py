"""Knowledge shards: export and import of a synthetic memory, beside pg_dump / pg_restore
of the same memory schema, in the same run.

``python -m benchmarks.shards [DATA_DIR] [--notes 10000] [--links-per-note 8] [--dim 384]
[--small-files 1000] [--small-bytes 4096] [--large-files 3] [--large-bytes 1048576]
[--seed N]``

DATA_DIR (optional): where the embedded PostgreSQL and the archives live (a temporary
folder, removed afterwards, when not given); DATABASE_URL points at an existing server.

Data: ``--notes`` notes of 2-7 sentences (``benchmarks._notes.payloads``) with their
original and version 1; for each, one chunk and its ``--dim`` vector (one embedding set)
and its note vector; ``--links-per-note`` semantic links to random other notes, and
explicit and wiki links for 2 % of the notes each; a vocabulary of 64 concepts, each note
tagged with one; ``--small-files`` attachments of about ``--small-bytes`` (text) and
``--large-files`` of ``--large-bytes`` (random, incompressible), on random notes, their
bytes in a local blob store under DATA_DIR. Written by SQL into a fresh memory, then
VACUUM ANALYZE.

Measured, best of ``--rounds``:
* shard export: ``ShardService.export`` (full-v1 with vectors) to a file;
* shard import: ``ShardService.import_`` of that file into a fresh empty memory (validation
  pass and the one-transaction write, lexical index rebuilt by the note triggers);
* pg_dump: ``pg_dump -Fc -n <memory schema>`` (zlib at its default level, as the shard's
  gzip) to a file; pg_restore: ``pg_restore`` of it into a fresh database with pgvector,
  the binaries pgserver ships beside its postgres.

pg_dump does not include the blob store's bytes (the shard does): the table prints the
pg_dump figures alone and with ``tar -czf`` / ``tar -xzf`` of the memory's blob folder
added, and the sizes both ways.
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

import blake3
import numpy as np

from benchmarks._common import (
    backing_services,
    bench_home,
    common_setup,
    print_setup,
    table,
)
from benchmarks._notes import payloads
from fortemi.documents.attachments.storage import LocalBlobStore
from fortemi.documents.shards import BlobBytes, ImportOptions, ShardService
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


async def _attach(
    db: Database, memory: str, blobs: BlobBytes, args: argparse.Namespace
) -> tuple[int, int]:
    """The attachments, their bytes in the store; (files, bytes)."""
    rng = random.Random(args.seed + 1)
    async with db.memory_transaction(memory) as conn:
        note_ids = [r["id"] for r in await conn.fetch("SELECT id FROM note")]
    files = [
        (
            f"small-{n}.txt",
            " ".join(f"w{rng.randrange(5000)}" for _ in range(args.small_bytes // 6)),
        )
        for n in range(args.small_files)
    ]
    blobs.staging.mkdir(parents=True, exist_ok=True)
    rows, total = [], 0
    for index, (name, payload) in enumerate(
        [*((n, t.encode()) for n, t in files), *(
            (f"large-{n}.bin", rng.randbytes(args.large_bytes)) for n in range(args.large_files)
        )]
    ):  # fmt: skip
        digest = blake3.blake3(payload).hexdigest()
        staged = blobs.staging / f"bench-{index}"
        staged.write_bytes(payload)
        await blobs.store.put(memory, digest, staged)
        rows.append((uuid.uuid4(), rng.choice(note_ids), digest, name, len(payload)))
        total += len(payload)
    async with db.memory_transaction(memory) as conn:
        await conn.executemany(
            "INSERT INTO blob (digest, size) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            [(d, size) for _, _, d, _, size in rows],
        )
        await conn.executemany(
            "INSERT INTO attachment (id, note_id, blob_digest, filename, size, mime_detected, "
            "document_type, detection_method, detection_confidence, extraction_status) "
            "VALUES ($1, $2, $3, $4, $5, 'application/octet-stream', 'binary', 'extension', "
            "0.9, 'skipped')",
            rows,
        )
    return len(rows), total


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
            blobs = BlobBytes(LocalBlobStore(folder / "blobs"), folder / "blobs" / ".staging")
            files, blob_bytes = await _attach(db, source, blobs, args)
            setup.append(("data", ", ".join(f"{v:,} {k}" for k, v in counts.items())))
            setup.append(("attachments", f"{files:,} files, {blob_bytes / 2**20:.1f} MiB of bytes"))
            setup.append(("load", f"{time.perf_counter() - started:.1f} s by SQL"))
            print_setup("Knowledge shards: export/import vs pg_dump/pg_restore", setup)
            shards = ShardService(db, blobs)
            shard, dump = folder / "bench.shard", folder / "bench.dump"
            packed, unpacked = folder / "blobs.tgz", folder / "unpacked"
            rows: list[tuple[str, float, float]] = []
            export_s, import_s, dump_s, restore_s, tar_s, untar_s = [], [], [], [], [], []
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
                # What pg_dump leaves out: the memory's folder of the blob store.
                tar_s.append(
                    _timed(["tar", "-czf", str(packed), "-C", str(folder / "blobs"), source])
                )
                shutil.rmtree(unpacked, ignore_errors=True)
                unpacked.mkdir()
                untar_s.append(_timed(["tar", "-xzf", str(packed), "-C", str(unpacked)]))
                async with db.connection() as conn:
                    await conn.execute(f'DROP DATABASE "{restored}" WITH (FORCE)')
            rows = [
                ("export (shard) vs pg_dump", min(export_s), min(dump_s)),
                ("import (shard) vs pg_restore", min(import_s), min(restore_s)),
                (
                    "export (shard) vs pg_dump + tar of blobs",
                    min(export_s),
                    min(d + t for d, t in zip(dump_s, tar_s, strict=True)),
                ),
                (
                    "import (shard) vs pg_restore + untar of blobs",
                    min(import_s),
                    min(r + u for r, u in zip(restore_s, untar_s, strict=True)),
                ),
            ]
            print(
                table(
                    ["operation", "shard s", "pg s", "ratio"],
                    [(n, f"{a:.2f}", f"{b:.2f}", f"{a / b:.2f}x") for n, a, b in rows],
                    "lrrr",
                )
            )
            size_shard, size_dump = shard.stat().st_size, dump.stat().st_size
            size_tar = packed.stat().st_size
            print(
                f"\nsizes: shard {size_shard / 2**20:.1f} MiB (bytes included); pg_dump -Fc "
                f"{size_dump / 2**20:.1f} MiB without the bytes ({size_shard / size_dump:.2f}x), "
                f"{(size_dump + size_tar) / 2**20:.1f} MiB with their tar.gz "
                f"({size_shard / (size_dump + size_tar):.2f}x); best of {args.rounds} round(s)"
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
    parser.add_argument("--small-files", type=int, default=1000)
    parser.add_argument("--small-bytes", type=int, default=4096)
    parser.add_argument("--large-files", type=int, default=3)
    parser.add_argument("--large-bytes", type=int, default=1_048_576)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with bench_home(args.data_dir) as folder:
        asyncio.run(_run(args, folder))


if __name__ == "__main__":
    main()
