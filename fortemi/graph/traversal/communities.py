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
from collections.abc import Mapping, Sequence
from typing import Protocol
from uuid import UUID

from fortemi.graph.traversal.louvain import louvain
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


def partition(
    node_ids: Sequence[UUID], edges: EdgeColumns
) -> tuple[dict[UUID, int], dict[UUID, float]]:
    """Each node's community id and confidence (see the module's docstring)."""
    index = {node: i for i, node in enumerate(node_ids)}
    weights: dict[tuple[int, int], float] = {}
    for source, target, score in zip(edges.source, edges.target, edges.score, strict=True):
        a, b = index[source], index[target]
        pair = (a, b) if a < b else (b, a)
        weights[pair] = max(weights.get(pair, 0.0), score, _MIN_WEIGHT)
    found = louvain(len(node_ids), [(a, b, w) for (a, b), w in weights.items()])
    size = Counter(found)
    # louvain numbers communities by first node; order them by size, then first node.
    first: dict[int, int] = {}
    for i, c in enumerate(found):
        first.setdefault(c, i)
    ranked = sorted(size, key=lambda c: (-size[c], first[c]))
    renumber = {c: rank for rank, c in enumerate(ranked)}
    total = [0.0] * len(node_ids)
    inside = [0.0] * len(node_ids)
    for (a, b), weight in weights.items():
        total[a] += weight
        total[b] += weight
        if found[a] == found[b]:
            inside[a] += weight
            inside[b] += weight
    community = {node: renumber[found[i]] for i, node in enumerate(node_ids)}
    confidence = {
        node: 1.0 if total[i] == 0 else inside[i] / total[i] for i, node in enumerate(node_ids)
    }
    return community, confidence


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
    labels: bool = True,
    conn: Connection | None = None,
) -> NodeColumns:
    """``nodes`` with their community, its label and their confidence filled in.

    ``carried``: the nodes' concept ids when the caller has read them already; else they
    are read here. ``labels`` off leaves every label None and reads no concept at all (the
    caller asked for none). ``conn``: the caller's transaction in ``memory``, for the
    vocabulary's reads."""
    community, confidence = partition(nodes.id, edges)
    named: dict[int, str] = {}
    if labels and concepts is not None and len(nodes):
        if carried is None:
            carried = await concepts.concept_ids(memory, list(community), conn=conn)
        winners = _winners(community, carried)
        if winners:
            found = await concepts.labels(memory, sorted(set(winners.values())), conn=conn)
            named = {group: found[c] for group, c in winners.items() if c in found}
    groups = [community[node] for node in nodes.id]
    return NodeColumns(
        id=nodes.id,
        title=nodes.title,
        depth=nodes.depth,
        archived=nodes.archived,
        created_at=nodes.created_at,
        updated_at=nodes.updated_at,
        community=groups,
        community_label=[named.get(group) for group in groups],
        community_confidence=[confidence[node] for node in nodes.id],
    )
