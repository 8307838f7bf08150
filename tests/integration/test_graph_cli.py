"""``fortemi graph backfill``: enqueues one deduplicated sweep per memory (or the one
named) for the workers, says when one is already waiting, refuses an unknown memory and a
limit out of range."""

from __future__ import annotations

import argparse

import pytest

from fortemi.cli import _parser
from fortemi.cli.graph import _backfill_async
from fortemi.graph.backfill import GRAPH_BACKFILL
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.settings import Settings


async def test_backfill_enqueues_a_sweep_of_the_memory_once(
    settings: Settings,
    service_urls: ServiceUrls,
    db: Database,
    memory: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await _backfill_async(settings, service_urls.database, memory, 50) == 0
    assert await _backfill_async(settings, service_urls.database, memory, None) == 0

    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{memory}: GraphBackfill enqueued (job ")
    assert out[1].startswith(f"{memory}: GraphBackfill already waiting (job ")
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT payload, status FROM public.job WHERE memory = $1 AND type = $2",
            memory,
            GRAPH_BACKFILL,
        )
    assert [(r["status"], r["payload"]) for r in rows] == [("pending", {"limit": 50})]


async def test_backfill_of_an_unknown_memory_is_an_error_naming_it(
    settings: Settings, service_urls: ServiceUrls, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await _backfill_async(settings, service_urls.database, "no_such_memory", None) == 1
    assert "no memory named 'no_such_memory'" in capsys.readouterr().out


@pytest.mark.parametrize("limit", ["0", "100001", "many"])
def test_a_limit_out_of_range_is_a_usage_error(
    limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["graph", "backfill", "--limit", limit])
    assert exited.value.code == 2
    assert "--limit takes a whole number in 1..100000" in capsys.readouterr().err


def test_the_command_is_listed_with_its_options() -> None:
    args = _parser().parse_args(["graph", "backfill", "--memory", "notes", "--limit", "10"])
    assert isinstance(args, argparse.Namespace)
    assert (args.memory, args.limit) == ("notes", 10)
