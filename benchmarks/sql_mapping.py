"""What the declared-columns mapper costs per row, next to a hand-written one.

``python -m benchmarks.sql_mapping [--rows N] [--rounds R]``

N note rows (dicts with the keys and value types asyncpg returns for ``note``) are mapped
to :class:`~fortemi.platform.notes.models.Note` R times by a hand-written mapper (one
``Note(id=row["id"], ...)`` call, what the repositories had) and by
``Table.from_record``; and the insert binds of N notes are built as a positional tuple
and through ``Query.args``. The best round of each is printed, in microseconds per row.
No database: this isolates the Python work the mapper adds to each row of a query.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from benchmarks._common import print_setup, table
from fortemi.platform.notes.models import Note
from fortemi.platform.sql import Query, Table

NOTE = Table("note", Note)
INSERT = Query(
    "SELECT :id, :title, :content, :format, :source, :metadata, :tags, :collection, :project,"
    " :starred, :archived, :content_hash, :external_source, :external_id, :actor, :skill"
)


def _hand(row: dict[str, Any]) -> Note:
    return Note(
        id=row["id"],
        title=row["title"],
        content=row["content"],
        format=row["format"],
        source=row["source"],
        metadata=row["metadata"],
        tags=tuple(row["tags"]),
        collection=row["collection"],
        project=row["project"],
        skill=row["skill"],
        starred=row["starred"],
        archived=row["archived"],
        version=row["version"],
        content_hash=row["content_hash"],
        external_source=row["external_source"],
        external_id=row["external_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        deleted_at=row["deleted_at"],
    )


def _rows(n: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    return [
        {
            "id": uuid4(), "title": f"note {i}", "content": "text " * 40, "format": "markdown",
            "source": None, "metadata": {"i": i}, "tags": ["a", "b"], "collection": None,
            "project": "p", "skill": None, "starred": False, "archived": False, "version": 1,
            "content_hash": "h" * 64, "external_source": None, "external_id": None,
            "created_at": now, "updated_at": now, "deleted_at": None,
        }
        for i in range(n)
    ]  # fmt: skip


def _best(rounds: int, n: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sql_mapping", description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    rows = _rows(args.rows)
    notes = [_hand(row) for row in rows]
    assert [NOTE.from_record(row) for row in rows] == notes

    def tuples() -> object:
        return [
            (n.id, n.title, n.content, n.format, n.source, n.metadata, list(n.tags),
             n.collection, n.project, n.starred, n.archived, n.content_hash,
             n.external_source, n.external_id, None, n.skill)
            for n in notes
        ]  # fmt: skip

    def named() -> object:
        return [
            INSERT.args(NOTE.binds(n, omit=("version", "created_at", "updated_at", "deleted_at")),
                        actor=None)
            for n in notes
        ]  # fmt: skip

    figures = [
        ("row -> Note, hand-written",
         _best(args.rounds, args.rows, lambda: list(map(_hand, rows)))),
        ("row -> Note, Table.from_record",
         _best(args.rounds, args.rows, lambda: list(map(NOTE.from_record, rows)))),
        ("Note -> insert args, positional tuple", _best(args.rounds, args.rows, tuples)),
        ("Note -> insert args, Table.binds + Query.args", _best(args.rounds, args.rows, named)),
    ]  # fmt: skip
    print_setup(
        "sql_mapping",
        [
            ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
            ("python", f"{platform.python_implementation()} {platform.python_version()}"),
            ("workload", f"{args.rows} rows, best of {args.rounds} rounds"),
        ],
    )
    print(table(["path", "us/row"], [(name, f"{us:.2f}") for name, us in figures], "lr"))


if __name__ == "__main__":
    main()
