"""What a shard component is: the memory tables it carries and what a profile leaves out.

A component is declared once, in its own module, and registered in
:mod:`fortemi.documents.shards.components`; export, validation and import read nothing
else. Columns are not listed here: a table's stored columns are read from the catalogue at
export (generated ones left out), so a column a later migration adds travels without a
change here, and the manifest names the columns each table's rows carry.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CORE", "FULL", "PROFILES", "ColumnLoss", "Component", "Ref", "Table"]

CORE = "core-v1"
FULL = "full-v1"
PROFILES = (CORE, FULL)


@dataclass(frozen=True, slots=True)
class Ref:
    """``columns`` of a row name the row of ``table`` whose key is ``target`` (a null
    value names nothing). Checked before any write: in the shard, else in the memory."""

    columns: tuple[str, ...]
    table: str
    target: tuple[str, ...] = ("id",)


@dataclass(frozen=True, slots=True)
class ColumnLoss:
    """Columns a profile leaves out of a table's rows, with the stable loss code; ``when``
    is a fixed SQL predicate counting the rows whose value is lost (never user input)."""

    profile: str
    columns: tuple[str, ...]
    code: str
    description: str
    when: str


@dataclass(frozen=True, slots=True)
class Table:
    """One memory table. ``key``: its primary key (export order, conflicts, references).

    ``history``: rows are immutable (a conflict never updates one). ``newer``: the column
    that tells which side is newer under ``--on-conflict merge``. ``tombstone``: a local
    row deleted this way is never revived by an import. ``identity``: a GENERATED ALWAYS
    identity column whose values are kept (``OVERRIDING SYSTEM VALUE``) and whose sequence
    is moved past them after an import.
    """

    name: str
    key: tuple[str, ...]
    refs: tuple[Ref, ...] = ()
    history: bool = False
    newer: str | None = None
    tombstone: str | None = None
    identity: str | None = None
    losses: tuple[ColumnLoss, ...] = ()
    # The unique index ON CONFLICT names, when it is not ``key``; and the SQL condition
    # matching a stored row ``t`` to an incoming one ``x``, when not equality on ``key``.
    target: tuple[str, ...] | None = None
    match: str | None = None

    @property
    def conflict_target(self) -> tuple[str, ...]:
        return self.target or self.key

    @property
    def match_sql(self) -> str:
        return self.match or " AND ".join(f't."{c}" = x."{c}"' for c in self.key)

    def dropped(self, profile: str) -> list[ColumnLoss]:
        return [loss for loss in self.losses if loss.profile == profile]


@dataclass(frozen=True, slots=True)
class Component:
    """A JSON-lines member of a shard: ``tables`` in the order they are written and
    imported (a row's references come before it). ``profiles``: where it is carried;
    elsewhere it is named in the loss report with ``loss_code``. ``optional``: an export
    option (``vectors``) may leave it out of a profile that carries it."""

    name: str
    tables: tuple[Table, ...]
    profiles: frozenset[str]
    loss_code: str
    description: str
    optional: str | None = None

    @property
    def path(self) -> str:
        return f"components/{self.name}.jsonl"
