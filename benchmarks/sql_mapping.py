"""What the declared-columns mapper costs per row, next to a hand-written one.

``python -m benchmarks.sql_mapping [--rows N] [--rounds R]``

N note rows (dicts with the keys and value types asyncpg returns for ``note``) are mapped
to :class:`~fortemi.platform.notes.models.Note` R times by a hand-written mapper (one
``Note(id=row["id"], ...)`` call, what the repositories had) and by
``Table.from_record``; and the insert arguments of N notes are built as the positional
tuple the repository used to build and by ``NoteInsert.args`` (named binds). The best
round of each is printed, in microseconds per row. No database: this isolates the Python
work the mapper adds to each row of a query.
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
from fortemi.platform.notes.models import Note, NoteDraft
from fortemi.platform.notes.repository import NoteInsert
from fortemi.platform.sql import Table

NOTE = Table("note", Note)


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

    inserts = [
        NoteInsert(
            id=n.id,
            state=NoteDraft(
                title=n.title, content=n.content, format=n.format, source=n.source,
                metadata=n.metadata, tags=n.tags, collection=n.collection, project=n.project,
                skill=n.skill, starred=n.starred, archived=n.archived,
            ),
            content_hash=n.content_hash,
            actor=None,
        )
        for n in notes
    ]  # fmt: skip

    def tuples() -> object:
        # The positional tuple the repository built before named binds.
        return [
            (i.id, i.state.title, i.state.content, i.state.format, i.state.source,
             i.state.metadata, list(i.state.tags), i.state.collection, i.state.project,
             i.state.starred, i.state.archived, i.content_hash, i.external_source,
             i.external_id, i.actor, i.state.skill)
            for i in inserts
        ]  # fmt: skip

    def named() -> object:
        return [i.args() for i in inserts]

    figures = [
        ("row -> Note, hand-written",
         _best(args.rounds, args.rows, lambda: list(map(_hand, rows)))),
        ("row -> Note, Table.from_record",
         _best(args.rounds, args.rows, lambda: list(map(NOTE.from_record, rows)))),
        ("NoteInsert -> args, positional tuple (before)", _best(args.rounds, args.rows, tuples)),
        ("NoteInsert -> args, named binds (repository)", _best(args.rounds, args.rows, named)),
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
