"""Vault wiki links: resolution rate, write cost, reachable sets and vault status, in-process
on the real PostgreSQL.

``python -m benchmarks.vault_links [--copies 12] [--rounds 200] [--home DIR] [--seed N]``

Data: the Foam documentation vault (``tests/data/vaults/foam-docs/vault``, 86 notes, 199
links outside code) replicated ``--copies`` times into projects (``projects/p<i>/...``),
so every bare name matches once per project and only the own-project rule keeps links
inside their copy; then the homelab fixture vault. Notes are written as the vault sync
writes them (external source ``vault:V``, path and vault in metadata, project from the
folder), through the note service with the wiki-link indexer, in batches of 100.

Figures: the resolution rate and rules as stored; the sync's time per batch; one note's new
version (its references and keys replaced and resolved, in its transaction) over
``--rounds`` random notes; ``LinkService.reachable`` per project; ``vault_status``; and
the plan of the vault resolution statement (index probes, no sequential scan).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from uuid import UUID

from benchmarks._common import (
    REPO,
    Latency,
    Stage,
    backing_services,
    bench_home,
    common_setup,
    ms,
    print_setup,
    table,
)
from fortemi.graph.links import LinkService, WikiLinkIndexer
from fortemi.graph.links.repository import _RESOLVE_VAULT
from fortemi.graph.links.wiki import front_matter
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.notes import ChangePolicy, ExternalItem, NotePatch, NoteService

VAULTS = REPO / "tests" / "data" / "vaults"
BATCH = 100


def _files(root: Path) -> list[tuple[str, str]]:
    return [
        (f.relative_to(root).as_posix(), f.read_text(encoding="utf-8"))
        for f in sorted(root.rglob("*.md"))
    ]


def _item(vault: str, path: str, content: str) -> ExternalItem:
    parts = path.split("/")
    project = parts[1] if parts[0] == "projects" and len(parts) > 2 else None
    skill = parts[2] if parts[:2] == ["shared", "skills"] and len(parts) > 3 else None
    title = front_matter(content).get("title") or PurePosixPath(path).stem
    return ExternalItem(
        external_id=path,
        title=str(title),
        content=content,
        metadata={"path": path, "vault": vault},
        project=project,
        skill=skill,
    )


async def _sync(
    notes: NoteService, memory: str, vault: str, files: Sequence[tuple[str, str]]
) -> tuple[dict[str, UUID], list[float]]:
    ids: dict[str, UUID] = {}
    took: list[float] = []
    for start in range(0, len(files), BATCH):
        items = [_item(vault, p, c) for p, c in files[start : start + BATCH]]
        t0 = time.perf_counter()
        results = await notes.upsert_external(
            memory, f"vault:{vault}", items, ChangePolicy.VERSION, actor="bench"
        )
        took.append(time.perf_counter() - t0)
        ids.update({r.external_id: r.note.id for r in results})
    return ids, took


async def _rates(stage: Stage, memory: str, vault: str) -> list[list[str]]:
    async with stage.db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT l.resolution, count(*) AS n FROM wiki_link l JOIN note s"
            " ON s.id = l.source_id WHERE s.metadata ->> 'vault' = $1 GROUP BY 1 ORDER BY 2 DESC",
            vault,
        )
    total = sum(row["n"] for row in rows)
    return [[row["resolution"], f"{row['n']:,}", f"{row['n'] / total:.1%}"] for row in rows]


async def _plan(stage: Stage, memory: str, vault: str) -> str:
    async with stage.db.memory_transaction(memory) as conn:
        keys = await conn.fetch(
            "SELECT key FROM note_wiki_key k JOIN note n ON n.id = k.note_id"
            " WHERE k.kind = 'vault' AND n.metadata ->> 'vault' = $1 LIMIT 20",
            vault,
        )
        lines = await conn.fetch(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + _RESOLVE_VAULT.sql,
            *_RESOLVE_VAULT.args(keys=[row["key"] for row in keys]),
        )
    # ANALYZE runs the UPDATE: it changes nothing, as every reference is resolved already.
    return "\n".join(row[0] for row in lines)


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    setup = await common_setup(urls, embedded, home)
    stage = await Stage.prepare(home, urls)
    notes = NoteService(
        stage.db,
        max_note_bytes=1_048_576,
        max_page_size=100,
        max_upsert_batch=BATCH,
        indexers=[WikiLinkIndexer(None)],
    )
    links = LinkService(stage.db)
    foam = _files(VAULTS / "foam-docs" / "vault")
    files = [(f"projects/p{i}/{path}", text) for i in range(args.copies) for path, text in foam]
    setup += [
        ("data", f"foam-docs x {args.copies} projects: {len(files):,} notes; homelab: 11"),
        ("path", "in-process: NoteService + WikiLinkIndexer, LinkService; 1 process"),
    ]
    print_setup("benchmarks.vault_links: wiki links inside vaults", setup)
    memory = await stage.open_memory()
    rng = random.Random(args.seed)
    try:
        ids, batches = await _sync(notes, memory, "foam", files)
        await _sync(notes, memory, "homelab", _files(VAULTS / "homelab" / "vault"))
        async with stage.db.memory_transaction(memory) as conn:
            await conn.execute("ANALYZE")
        for vault in ("foam", "homelab"):
            print(f"\nresolution ({vault}):")
            rates = await _rates(stage, memory, vault)
            print(table(["resolution", "links", "share"], rates, "lrr"))

        versions: list[float] = []
        texts = dict(files)
        paths = [path for path in ids if path in texts]
        for i in range(args.rounds):
            path = rng.choice(paths)
            text = texts[path]
            note_id = ids[path]
            t0 = time.perf_counter()
            await notes.update(
                memory, note_id, NotePatch(content=f"{text}\n\nround {i}"), actor="bench"
            )
            versions.append(time.perf_counter() - t0)
        reach: list[float] = []
        sizes: list[int] = []
        for _ in range(args.rounds):
            project = f"p{rng.randrange(args.copies)}"
            t0 = time.perf_counter()
            found = await links.reachable(memory, "foam", project)
            reach.append(time.perf_counter() - t0)
            sizes.append(len(found))
        status: list[float] = []
        for _ in range(max(10, args.rounds // 10)):
            t0 = time.perf_counter()
            await links.vault_status(memory, "foam", visibility=None)
            status.append(time.perf_counter() - t0)
        rows = []
        for name, samples in (
            (f"sync, per batch of {BATCH} notes", batches),
            ("one note's new version (links re-resolved)", versions),
            (f"reachable(project), {min(sizes)}-{max(sizes)} notes", reach),
            (f"vault_status over {len(files):,} notes", status),
        ):
            lat = Latency.of(samples)
            rows.append([name, f"{lat.count}", ms(lat.p50), ms(lat.p95)])
        print()
        print(table(["operation", "n", "p50 ms", "p95 ms"], rows, "lrrr"))
        print("\nplan of the vault resolution statement (20 keys):")
        print(await _plan(stage, memory, "foam"))
    finally:
        await stage.memories.delete(memory, confirm=memory)
        await stage.db.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.vault_links", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--copies", type=int, default=12, help="projects of foam-docs")
    parser.add_argument("--rounds", type=int, default=200, help="measured operations each")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    if args.copies < 1 or args.rounds < 10:
        parser.error("--copies >= 1, --rounds >= 10")
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        asyncio.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
