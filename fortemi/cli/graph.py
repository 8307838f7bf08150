"""``fortemi graph backfill``: sweep memories for notes missing their tagging or links.

The same ``GraphBackfill`` job every worker enqueues when it starts, asked for now: one
per memory (or the one named), deduplicated with a sweep already waiting. The workers run
it (a running worker's relay sends it within seconds; otherwise the next worker to start).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from fortemi.cli.common import Commands, load_settings, setup_logging

if TYPE_CHECKING:
    from fortemi.platform.settings import Settings

__all__ = ["add_graph"]


def _backfill(args: argparse.Namespace) -> int:
    from fortemi.platform.embedded import EmbeddedServices

    settings = load_settings()
    setup_logging(settings)
    services = EmbeddedServices(settings.home)
    try:
        urls = services.start(settings)
        return asyncio.run(_backfill_async(settings, urls.database, args.memory, args.limit))
    finally:
        services.stop()


async def _backfill_async(
    settings: Settings, database_url: str, memory: str | None, limit: int | None
) -> int:
    from fortemi.graph.backfill import GraphBackfill, graph_backfill_type, startup_specs
    from fortemi.platform.database import Database
    from fortemi.platform.jobs.registry import JobRegistry
    from fortemi.platform.jobs.service import JobService
    from fortemi.platform.memories import MemoryService
    from fortemi.platform.migrations import Migrations
    from fortemi.retrieval.service import ChunkVectorService

    db = await Database.connect(database_url, min_size=1, max_size=2)
    try:
        memories = MemoryService(db, Migrations(settings.migrations_dir))
        if memory is not None:
            if not await memories.exists(memory):
                print(f"fortemi graph backfill: no memory named {memory!r}")
                return 1
            names = [memory]
        else:
            names = [found.name for found in await memories.list()]
        # Only the job's type is needed here (its tier and priority); the workers run it.
        registry = JobRegistry()
        registry.register(graph_backfill_type(GraphBackfill(db, ChunkVectorService(db))))
        jobs = JobService(db, registry)
        specs = startup_specs(names, limit=limit or settings.graph_backfill_limit)
        for name, (job, created) in zip(names, await jobs.submit_many(specs), strict=True):
            state = "enqueued" if created else "already waiting"
            print(f"{name}: GraphBackfill {state} (job {job.id})")
    finally:
        await db.close()
    return 0


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"--limit takes a whole number in 1..100000, not {text!r}")
    return value


def add_graph(commands: Commands) -> None:
    graph = commands.add_parser("graph", help="knowledge-graph operations")
    graph_commands = graph.add_subparsers(dest="graph_command", required=True)
    backfill = graph_commands.add_parser(
        "backfill", help="enqueue tagging and linking for notes that never got them"
    )
    backfill.add_argument("--memory", help="one memory (default: every memory)")
    backfill.add_argument(
        "--limit", type=_limit, help="notes a step looks at per kind (FORTEMI_GRAPH_BACKFILL_LIMIT)"
    )
    backfill.set_defaults(run=_backfill)
