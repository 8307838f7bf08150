"""PostgreSQL snapshots as the in-process segments keep them (the lexical segment in
``fortemi.retrieval``, the traversal segment in ``fortemi.graph``): which transactions a
segment's data reflects, and whether a query's snapshot sees at least as much."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Snapshot"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A PostgreSQL snapshot (``pg_current_snapshot()``): transactions below ``xmin`` are
    finished, those from ``xmax`` on had not started, those in ``xip`` were running."""

    xmin: int
    xmax: int
    xip: frozenset[int]

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        """From ``pg_snapshot``'s text form, ``xmin:xmax:xip,xip,...``."""
        xmin, xmax, running = text.split(":")
        return cls(int(xmin), int(xmax), frozenset(int(x) for x in running.split(",") if x))

    def __str__(self) -> str:
        """The text form :meth:`parse` reads (and ``pg_snapshot`` too)."""
        return f"{self.xmin}:{self.xmax}:{','.join(map(str, sorted(self.xip)))}"

    def precedes(self, later: Snapshot) -> bool:
        """Whether every transaction this snapshot sees committed, ``later`` sees committed
        too: nothing it saw started after ``later`` was taken, and nothing it saw finished
        is still running in ``later``. (A segment taken after the query's snapshot may hold
        writes the query must not see; it is not used for that query.)"""
        return self.xmax <= later.xmax and all(x in self.xip for x in later.xip if x < self.xmax)
