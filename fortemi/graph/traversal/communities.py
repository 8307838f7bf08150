"""Communities of a returned sub-graph: Louvain, labelled by concepts.

Computed on the sub-graph the caller receives, not read from the memory-wide maintenance
run: a neighbourhood shows how *its* notes group, they are all readable by the caller (a
memory-wide community could be named after notes the caller may not see), and the answer
never waits for maintenance.

* Louvain (:mod:`.louvain`, resolution 1.0: networkx's costs more than the request's whole
  budget at this size) on an undirected graph whose weight for a pair is its strongest
  edge's score, floored at 1e-6 so a zero-score explicit link still binds its ends. Nodes
  are visited in the response's order, so the same sub-graph always gives the same
  partition.
* Ids: communities ordered by size (largest first), then by their earliest node in the
  response (the start's comes first among equals); 0, 1, 2...
* Label: the concept most notes of the community carry (ties: the smaller concept id), by
  its preferred label; None when its notes carry none (or no vocabulary is wired).
* Confidence: the share of a node's weighted degree that stays inside its community, in
  [0, 1]; an isolated node is its own community, with confidence 1.0 (nothing pulls it
  elsewhere).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol
from uuid import UUID

from fortemi.graph.traversal.louvain import membership
from fortemi.graph.traversal.models import EdgeColumns, NodeColumns
from fortemi.platform.database import Connection

__all__ = ["ConceptLabels", "assign_communities", "partition"]

_MIN_WEIGHT = 1e-6


class ConceptLabels(Protocol):
    """What the traversal needs of the vocabulary (``VocabularyService`` provides it).

    ``conn``: the traversal's own transaction in ``memory``, so each read is one round
    trip on the connection the walk used, not a transaction on a second one."""

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, frozenset[UUID]]: ...

    async def labels(
        self, memory: str, concept_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, str]: ...


def partition(node_ids: Sequence[UUID], edges: EdgeColumns) -> tuple[list[int], list[float]]:
    """Each node's community id and confidence, in the order of ``node_ids`` (see the
    module's docstring).

    Plain Python over a few hundred pairs: a dict keeps each pair's strongest score in
    order of first appearance, and the sums run over the pairs in that order, so the
    confidences are the same floats as any loop over the pairs gives. (numpy paid more in
    per-call overhead, ~15 array operations on arrays this small, than it saved.)"""
    n = len(node_ids)
    sources: Iterable[int]
    targets: Iterable[int]
    if edges.source_at is not None and edges.target_at is not None:
        sources, targets = edges.source_at, edges.target_at
    else:
        index = dict(zip(node_ids, range(n), strict=True))
        sources = map(index.__getitem__, edges.source)
        targets = map(index.__getitem__, edges.target)
    strongest: dict[tuple[int, int], float] = {}
    get = strongest.get
    for a, b, score in zip(sources, targets, edges.score, strict=True):
        pair = (a, b) if a < b else (b, a)
        known = get(pair)
        if known is None or score > known:
            strongest[pair] = score
    pairs = list(strongest)
    weights = [max(score, _MIN_WEIGHT) for score in strongest.values()]
    found = membership(n, pairs, weights)
    # louvain numbers communities by first node; rank them by size, then first node.
    size = Counter(found)
    renumber = [0] * len(size)
    for rank, group in enumerate(sorted(size, key=lambda group: (-size[group], group))):
        renumber[group] = rank
    total = [0.0] * n
    inside = [0.0] * n
    for (a, b), weight in zip(pairs, weights, strict=True):
        total[a] += weight
        total[b] += weight
        if found[a] == found[b]:
            inside[a] += weight
            inside[b] += weight
    confidence = [1.0 if t == 0 else i / t for i, t in zip(inside, total, strict=True)]
    return [renumber[group] for group in found], confidence


def _winners(
    community: dict[UUID, int], carried: Mapping[UUID, frozenset[UUID]]
) -> dict[int, UUID]:
    """Each community's most carried concept (ties: the smaller concept id)."""
    counts: dict[int, Counter[UUID]] = {}
    for note, concept_ids in carried.items():
        group = community.get(note)
        if group is not None and concept_ids:
            counter = counts.get(group)
            if counter is None:
                counter = counts[group] = Counter()
            counter.update(concept_ids)
    return {
        group: min(counter.items(), key=lambda item: (-item[1], item[0]))[0]
        for group, counter in counts.items()
        if counter
    }


async def assign_communities(
    memory: str,
    nodes: NodeColumns,
    edges: EdgeColumns,
    concepts: ConceptLabels | None,
    *,
    carried: Mapping[UUID, frozenset[UUID]] | None = None,
    known_labels: Mapping[UUID, str] | None = None,
    labels: bool = True,
    conn: Connection | None = None,
) -> NodeColumns:
    """``nodes`` with their community, its label and their confidence filled in.

    ``carried``: the nodes' concept ids when the caller has read them already; else they
    are read here. ``known_labels``: the labels of those concepts, read with them (else
    the winners' labels are read here). ``labels`` off leaves every label None and reads
    no concept at all (the caller asked for none). ``conn``: the caller's transaction in
    ``memory``, for the vocabulary's reads."""
    groups, confidence = partition(nodes.id, edges)
    named: dict[int, str] = {}
    if labels and concepts is not None and len(nodes):
        if carried is None:
            carried = await concepts.concept_ids(memory, list(nodes.id), conn=conn)
        winners = _winners(dict(zip(nodes.id, groups, strict=True)), carried) if carried else {}
        if winners:
            if known_labels is not None:
                found: Mapping[UUID, str] = known_labels
            else:
                chosen = sorted(set(winners.values()))
                found = await concepts.labels(memory, chosen, conn=conn)
            named = {group: found[c] for group, c in winners.items() if c in found}
    return NodeColumns(
        id=nodes.id,
        title=nodes.title,
        depth=nodes.depth,
        archived=nodes.archived,
        created_at=nodes.created_at,
        updated_at=nodes.updated_at,
        community=groups,
        community_label=[named.get(group) for group in groups] if named else [None] * len(groups),
        community_confidence=confidence,
    )
