"""A memory's traversable links held in RAM as of one snapshot, and the walk over them.

The recursive statement (:mod:`.repository`) reads thousands of link rows a request: on
SciFact's 5k abstracts a depth-3 walk capped at 200 nodes expands about 150 nodes at its
last level, and PostgreSQL spends about 10 ms grouping, checking and sorting what they
link to. A graph database keeps its adjacency in memory; this module does the same for one
memory at a time, with numpy arrays, and answers exactly as the statement does:

* nodes are numbered in note-id order, so ordering by number is ordering by id (the
  statement's tie-break: PostgreSQL and Python order UUIDs alike, bytewise);
* the adjacency holds one entry per (note, neighbour, kind) over the traversable links of
  either direction, with the strongest normalised score of the two directions;
  normalisation is the statement's, from the same bounds (every semantic link, pruned
  ones included) and the same floating-point operations;
* a level drops the seen and the unreadable, keeps scores of at least ``minScore``, takes
  each new node's strongest link and counts its (frontier node, kind) links, orders the new
  nodes by score then id, and keeps as many as ``maxNodes`` leaves room for;
* the edges among the returned nodes are the stored rows between them, one per (pair,
  kind) in its stronger direction (ties: the smaller source), ordered by pair then kind
  (kinds in PostgreSQL's text order).

``tests/integration/graph/test_traversal_reference.py`` holds both paths to one reference
reading of the contract. What the segment may not know (the notes' titles and times,
whether anything changed since its snapshot) is read by the query, in its own snapshot:
see :mod:`.segments`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.graph.traversal.models import EdgeKind
from fortemi.platform.notes.models import NoteVisibility
from fortemi.platform.snapshots import Snapshot

__all__ = ["KINDS", "GraphSegment", "SegmentEdges", "SegmentLinks", "SegmentWalk"]

Ints = npt.NDArray[np.int64]
Small = npt.NDArray[np.int32]  # what is held per link: node numbers and codes
Floats = npt.NDArray[np.float64]
Flags = npt.NDArray[np.bool_]

# Kind codes in PostgreSQL's order of the kind's text, which the statement sorts by.
KINDS: tuple[EdgeKind, ...] = (EdgeKind.EXPLICIT, EdgeKind.SEMANTIC, EdgeKind.WIKI)
_CODE = {kind.value: code for code, kind in enumerate(KINDS)}
_SEMANTIC = _CODE["semantic"]
_EMPTY = np.zeros(0, dtype=np.int64)


def _codes(values: Sequence[str | None]) -> tuple[Ints, list[str | None]]:
    """Each value's code into the list of distinct values (None included)."""
    distinct: dict[str | None, int] = {}
    codes = np.fromiter(
        (distinct.setdefault(v, len(distinct)) for v in values), dtype=np.int64, count=len(values)
    )
    return codes, list(distinct)


def _ranges(ptr: Ints, nodes: Ints) -> tuple[Ints, Ints]:
    """The positions of ``nodes``' blocks in a CSR array, concatenated in ``nodes``' order,
    and each position's node."""
    starts = ptr[nodes]
    lengths = ptr[nodes + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    offsets = starts - np.cumsum(lengths) + lengths
    return np.repeat(offsets, lengths) + np.arange(total), np.repeat(nodes, lengths)


def _csr(owner: Ints, count: int) -> Ints:
    """Block boundaries of rows sorted by ``owner`` (a node number per row)."""
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=count), out=ptr[1:])
    return ptr


@dataclass(frozen=True, slots=True)
class SegmentLinks:
    """The traversable links as the build reads them, a column each: ends as note numbers,
    kind codes (:data:`KINDS`), raw scores, rank and set (-1: NULL), and model and
    computed-at codes into their distinct values (the times as the statement writes them)."""

    source: Ints
    target: Ints
    kind: Ints
    score: Floats
    rank: Ints
    set_id: Ints
    model: Ints
    models: list[str | None]
    computed: Ints
    stamps: list[str]


@dataclass(frozen=True, slots=True)
class SegmentWalk:
    """The walk's nodes (numbers, BFS order) and depths, and what it saw past them."""

    nodes: Ints
    depths: list[int]
    found: int
    cut: bool
    reached: int
    cut_edges: int


@dataclass(frozen=True, slots=True)
class SegmentEdges:
    """The edges among a walk's nodes, as row numbers of the segment's stored links (the
    stronger direction of each pair and kind, in pair-then-kind order), and whether each
    pair is stored both ways."""

    rows: Ints
    sources: Ints
    bidirectional: Flags


@dataclass(frozen=True, slots=True, eq=False)
class GraphSegment:
    """A memory's traversable links and its notes' read-scope columns as of ``snapshot``.

    ``relation`` is ``graph_change``'s table oid: a memory deleted and made again under the
    same name has another. Scores are normalised with ``gamma`` at build time."""

    snapshot: Snapshot
    relation: int
    gamma: float
    ids: list[UUID]  # every note, in id order
    index: dict[UUID, int]
    live: Flags
    project: Ints  # code into ``projects``; None is a code too
    projects: list[str | None]
    skill: Ints
    skills: list[str | None]
    # Adjacency, by node: (neighbour, strongest normalised score) per (node, neighbour, kind).
    adjacency_ptr: Ints
    neighbour: Small
    neighbour_score: Floats
    # The stored traversable rows, by source, then target and kind.
    row_ptr: Ints
    row_target: Small
    row_kind: Small
    row_score: Floats
    row_rank: Small  # -1: NULL
    row_set: Small  # -1: NULL
    row_model: Small
    models: list[str | None]
    row_computed: Small
    computed: list[str]  # computed_at as the statement writes it (fortemi.platform.isotext)

    @property
    def links(self) -> int:
        """Stored rows held: what the process's budget counts."""
        return len(self.row_target)

    @classmethod
    def of(
        cls,
        snapshot: Snapshot,
        relation: int,
        gamma: float,
        *,
        notes: tuple[list[UUID], list[bool], list[str | None], list[str | None]],
        bounds: tuple[float | None, float | None],
        links: SegmentLinks,
    ) -> GraphSegment:
        """From the notes in id order (id, live, project, skill), the semantic scores' min
        and max over every semantic link, and the traversable links."""
        ids, live, projects, skills = notes
        count = len(ids)
        source, target, kind = links.source, links.target, links.kind
        score = cls._normalised(links.score, kind, bounds, gamma)
        order = np.lexsort((kind, target, source))
        # Both directions of every row, grouped by (node, neighbour, kind): the strongest.
        a = np.concatenate((source, target))
        b = np.concatenate((target, source))
        k = np.concatenate((kind, kind))
        s = np.concatenate((score, score))
        by = np.lexsort((k, b, a))
        a, b, k, s = a[by], b[by], k[by], s[by]
        first = np.ones(len(a), dtype=np.bool_)
        first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (k[1:] != k[:-1])
        starts = np.flatnonzero(first)
        strongest = np.maximum.reduceat(s, starts) if len(starts) else s
        project, project_values = _codes(projects)
        skill, skill_values = _codes(skills)
        return cls(
            snapshot=snapshot,
            relation=relation,
            gamma=gamma,
            ids=ids,
            index={note: n for n, note in enumerate(ids)},
            live=np.array(live, dtype=np.bool_),
            project=project,
            projects=project_values,
            skill=skill,
            skills=skill_values,
            adjacency_ptr=_csr(a[starts], count),
            neighbour=b[starts].astype(np.int32),
            neighbour_score=strongest,
            row_ptr=_csr(source[order], count),
            row_target=target[order].astype(np.int32),
            row_kind=kind[order].astype(np.int32),
            row_score=score[order],
            row_rank=links.rank[order].astype(np.int32),
            row_set=links.set_id[order].astype(np.int32),
            row_model=links.model[order].astype(np.int32),
            models=links.models,
            row_computed=links.computed[order].astype(np.int32),
            computed=links.stamps,
        )

    @staticmethod
    def _normalised(
        raw: Floats, kind: Ints, bounds: tuple[float | None, float | None], gamma: float
    ) -> Floats:
        """The statement's normalisation: ``((s - lo) / (hi - lo)) ** gamma`` for semantic
        links (1.0 when every semantic score is the same), the score itself otherwise."""
        low, high = bounds
        semantic = kind == _SEMANTIC
        if low is None or high is None or not high > low:
            scaled = np.ones(len(raw))
        else:
            scaled = np.maximum(raw - low, 0.0) / (high - low)
            if gamma != 1.0:
                scaled = np.power(scaled, gamma)
        return np.where(semantic, scaled, raw)

    def readable(self, visibility: NoteVisibility | None) -> Flags:
        """Which notes are live and in the caller's read scope (the statement's predicate:
        a skill decides, else a project, else whether the memory's own notes are)."""
        if visibility is None or visibility.everything:
            return self.live
        project_ok = np.array(
            [p is not None and visibility.projects.contains(p) for p in self.projects],
            dtype=np.bool_,
        )
        skill_ok = np.array(
            [s is not None and visibility.skills.contains(s) for s in self.skills],
            dtype=np.bool_,
        )
        has_skill = np.array([s is not None for s in self.skills], dtype=np.bool_)[self.skill]
        has_project = np.array([p is not None for p in self.projects], dtype=np.bool_)[self.project]
        scope = np.where(
            has_skill,
            skill_ok[self.skill],
            np.where(has_project, project_ok[self.project], visibility.memory_notes),
        )
        return self.live & scope

    def walk(
        self, start: int, readable: Flags, *, depth: int, max_nodes: int, min_score: float
    ) -> SegmentWalk:
        """The walk from note number ``start`` (readable: the caller checked)."""
        seen = np.zeros(len(self.ids), dtype=np.bool_)
        seen[start] = True
        levels = [np.array([start], dtype=np.int64)]
        depths = [0]
        frontier = levels[0]
        returned, found, level, cut, cut_edges = 1, 1, 0, False, 0
        while level < depth and not cut and len(frontier):
            at, _ = _ranges(self.adjacency_ptr, frontier)
            other = self.neighbour[at]
            score = self.neighbour_score[at]
            keep = readable[other] & ~seen[other]
            if min_score > 0.0:
                keep &= score >= min_score
            other, score = other[keep], score[keep]
            room = max_nodes - returned
            if len(other):
                new, which = np.unique(other, return_inverse=True)
                best = np.full(len(new), -np.inf)
                np.maximum.at(best, which, score)
                links = np.bincount(which, minlength=len(new))
                ranked = np.lexsort((new, -best))  # score descending, then id
                frontier = new[ranked[:room]].astype(np.int64)
                cut = len(new) > room
                cut_edges = int(links[ranked[room:]].sum())
                found += len(new)
            else:
                frontier = _EMPTY
            level += 1
            seen[frontier] = True
            levels.append(frontier)
            depths += [level] * len(frontier)
            returned += len(frontier)
        return SegmentWalk(np.concatenate(levels), depths, found, cut, level, cut_edges)

    def edges(self, nodes: Ints, min_score: float) -> SegmentEdges:
        """The stored rows among ``nodes`` scoring at least ``min_score``, one per (pair,
        kind) in its stronger direction, ordered by pair then kind."""
        inside = np.zeros(len(self.ids), dtype=np.bool_)
        inside[nodes] = True
        rows, source = _ranges(self.row_ptr, nodes)
        target = self.row_target[rows]
        keep = inside[target]
        if min_score > 0.0:
            keep &= self.row_score[rows] >= min_score
        rows, source, target = rows[keep], source[keep], target[keep]
        if not len(rows):
            return SegmentEdges(_EMPTY, _EMPTY, np.zeros(0, dtype=np.bool_))
        low = np.minimum(source, target)
        high = np.maximum(source, target)
        kind = self.row_kind[rows]
        by = np.lexsort((source, -self.row_score[rows], kind, high, low))
        low, high, kind = low[by], high[by], kind[by]
        first = np.ones(len(by), dtype=np.bool_)
        first[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1]) | (kind[1:] != kind[:-1])
        starts = np.flatnonzero(first)
        sizes = np.diff(np.append(starts, len(by)))
        chosen = by[starts]
        return SegmentEdges(rows[chosen], source[chosen], sizes == 2)
