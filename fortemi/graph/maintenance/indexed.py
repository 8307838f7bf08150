"""A memory's graph as maintenance computes on it: notes at integer positions, links as
numpy arrays of positions.

Every step of the plan is array work on these positions (kNN rows, shared-neighbour
counts, triangle tests, Louvain's integer nodes); note ids come back only for the writes.
At 10k notes and 71k links, hashing, comparing and sorting ``uuid.UUID`` keys (each a
Python-level call) was about a third of the plan's time before this form.

Positions follow the notes' id order, so a pair ``(a, b)`` with ``a < b`` as positions is
the same pair with ``a < b`` as ids, and every order the plan derives from positions is
the order it would have had on the ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.graph.maintenance.algorithms import Pair, Vector

__all__ = [
    "Edges",
    "GraphState",
    "Ids",
    "IndexedGraph",
    "NoteVectors",
    "OtherRows",
    "Positions",
    "SemanticRows",
    "ids_from_bytes",
    "ids_of",
    "stack",
]

Positions = npt.NDArray[np.int64]
# Note ids as an (m, 2) array of their two 64-bit halves, most significant first: sorted
# as rows, they sort as PostgreSQL and Python sort uuids (by their 16 bytes).
Ids = npt.NDArray[np.uint64]
# Notes with a vector, and their vectors as the rows of a matrix in the same order.
NoteVectors = tuple[Ids, npt.NDArray[np.float32]]


def ids_from_bytes(raw: bytes) -> Ids:
    """Ids from uuids' 16-byte forms, one after the other (PostgreSQL's ``uuid_send``)."""
    return np.frombuffer(raw, dtype=">u8").reshape(-1, 2).astype(np.uint64)


def ids_of(notes: Iterable[UUID]) -> Ids:
    return ids_from_bytes(b"".join(note.bytes for note in notes))


def stack(vectors: Iterable[Vector]) -> npt.NDArray[np.float32]:
    """Vectors as the rows of one float32 matrix (0 x 1 when there are none)."""
    rows = list(vectors)
    return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, 1), dtype=np.float32)


def _positions(ids: Ids) -> tuple[Ids, Positions]:
    """The distinct ids in order, and each given id's position among them. Sorting the
    two halves with ``lexsort`` is about forty times faster than ``np.unique`` on a
    structured dtype, and than hashing 140k ``uuid.UUID`` objects."""
    order = np.lexsort((ids[:, 1], ids[:, 0]))
    ordered = ids[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.cumsum(new) - 1
    return ordered[new], position


@dataclass(frozen=True, slots=True)
class SemanticRows:
    """Semantic links as read, one row per pair: ends, score, PFNET flag, SNN (NaN: none)."""

    a: Ids
    b: Ids
    score: npt.NDArray[np.float64]
    pruned: npt.NDArray[np.bool_]
    snn: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class OtherRows:
    """Explicit and wiki links as read: ends and score."""

    a: Ids
    b: Ids
    score: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class GraphState:
    """A memory's graph as maintenance reads it, keyed by note id: the notes (nodes),
    their vectors in the linking set, semantic pairs with their score and the pairs
    PFNET pruned last time, and explicit/wiki pairs with their score. The plan turns it
    into an :class:`IndexedGraph`; the repository builds that form directly."""

    notes: Sequence[UUID]
    vectors: Mapping[UUID, Vector]
    semantic: Mapping[Pair, float]
    pruned: frozenset[Pair] = frozenset()
    other: Mapping[Pair, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Edges:
    """Undirected edges as parallel arrays: ``a < b`` (positions), one score each, in
    ``(a, b)`` order with no pair twice."""

    a: Positions
    b: Positions
    score: npt.NDArray[np.float64]

    @classmethod
    def of(
        cls, a: Positions, b: Positions, score: npt.NDArray[np.float64], *, merge_max: bool
    ) -> tuple[Edges, Positions]:
        """Edges from unordered ends; a pair given twice keeps its largest score when
        ``merge_max`` (explicit and wiki links, one row per direction), else its first.
        Also returns, for each edge, the index of the input row it came from."""
        low, high = np.minimum(a, b), np.maximum(a, b)
        # Sorted by pair, then score descending: the first row of each pair is kept.
        order = (np.lexsort((-score, high, low)) if merge_max else np.lexsort((high, low))).astype(
            np.int64
        )
        low, high = low[order], high[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
        kept = order[first]
        return cls(low[first], high[first], score[kept]), kept

    def __len__(self) -> int:
        return len(self.a)

    def keys(self, n: int) -> npt.NDArray[np.int64]:
        """One integer per pair (``a * n + b``), ascending in ``(a, b)`` order."""
        return self.a * n + self.b

    def subset(self, mask: npt.NDArray[np.bool_]) -> Edges:
        return Edges(self.a[mask], self.b[mask], self.score[mask])


@dataclass(frozen=True, slots=True)
class IndexedGraph:
    """``notes[i]`` is node i (ids ascending). ``rows[i]`` is node i's row of ``matrix``
    (its vector; rows in node order), -1 for a note without one. Per semantic edge:
    whether PFNET pruned it last time and its stored SNN score (NaN: none)."""

    notes: Sequence[UUID]
    rows: Positions
    matrix: npt.NDArray[np.float32]
    semantic: Edges
    other: Edges
    pruned: npt.NDArray[np.bool_]
    snn: npt.NDArray[np.float64]

    @property
    def size(self) -> int:
        return len(self.notes)

    @classmethod
    def build(
        cls,
        vectors: NoteVectors,
        semantic: SemanticRows,
        other: OtherRows,
        extra_notes: Ids | None = None,
    ) -> IndexedGraph:
        """From the notes with a vector (ids, and their vectors as the rows of a matrix in
        the same order), the semantic pairs (one row per pair) and the explicit/wiki
        links (a pair possibly in both directions). The nodes are every note named
        anywhere, ``extra_notes`` included."""
        vector_ids, vector_rows = vectors
        parts = [vector_ids, semantic.a, semantic.b, other.a, other.b]
        if extra_notes is not None:
            parts.append(extra_notes)
        universe, position = _positions(np.concatenate(parts))
        cuts = np.cumsum([len(part) for part in parts])
        at_vector, sem_a, sem_b, other_a, other_b = np.split(position, cuts[:-1])[:5]
        rows = np.full(len(universe), -1, dtype=np.int64)
        order = np.argsort(at_vector, kind="stable")
        rows[at_vector[order]] = np.arange(len(order))
        matrix = (
            np.ascontiguousarray(vector_rows[order], dtype=np.float32)
            if len(order)
            else np.zeros((0, 1), dtype=np.float32)
        )
        sem, kept = Edges.of(sem_a, sem_b, semantic.score, merge_max=False)
        others, _ = Edges.of(other_a, other_b, other.score, merge_max=True)
        raw = universe.astype(">u8").tobytes()
        notes = [UUID(bytes=raw[i : i + 16]) for i in range(0, len(raw), 16)]
        return cls(notes, rows, matrix, sem, others, semantic.pruned[kept], semantic.snn[kept])

    @classmethod
    def of(cls, state: GraphState) -> IndexedGraph:
        semantic = list(state.semantic.items())
        other = list(state.other.items())
        vectors = list(state.vectors.items())
        pruned = state.pruned
        return cls.build(
            (
                ids_of(note for note, _ in vectors),
                stack(vector for _, vector in vectors),
            ),
            SemanticRows(
                ids_of(a for (a, _), _ in semantic),
                ids_of(b for (_, b), _ in semantic),
                np.array([score for _, score in semantic], dtype=np.float64),
                np.array([bool(pruned) and p in pruned for p, _ in semantic], dtype=bool),
                np.full(len(semantic), np.nan),
            ),
            OtherRows(
                ids_of(a for (a, _), _ in other),
                ids_of(b for (_, b), _ in other),
                np.array([score for _, score in other], dtype=np.float64),
            ),
            extra_notes=ids_of(state.notes),
        )

    def ids(self, positions: Positions) -> list[UUID]:
        """The note ids at ``positions``."""
        notes = self.notes
        return [notes[i] for i in positions.tolist()]

    def pairs(self, mask: npt.NDArray[np.bool_]) -> list[Pair]:
        """The semantic edges selected by ``mask``, as note-id pairs."""
        return list(
            zip(self.ids(self.semantic.a[mask]), self.ids(self.semantic.b[mask]), strict=True)
        )
