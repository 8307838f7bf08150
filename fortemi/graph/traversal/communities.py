"""Communities of a returned sub-graph: Louvain, labelled by concepts.

Computed on the sub-graph the caller receives, not read from the memory-wide maintenance
run: a neighbourhood shows how *its* notes group, they are all readable by the caller (a
memory-wide community could be named after notes the caller may not see), and the answer
never waits for maintenance.

* Louvain (networkx ``louvain_communities``, resolution 1.0, fixed seed) on an undirected
  graph whose weight for a pair is its strongest edge's score, floored at 1e-6 so a
  zero-score explicit link still binds its ends. Nodes and edges are added in the response's
  order, so the same sub-graph always gives the same partition.
* Ids: communities ordered by size (largest first), then by their earliest node in the
  response (the start's comes first among equals); 0, 1, 2...
* Label: the concept most notes of the community carry (ties: the smaller concept id), by
  its preferred label; None when its notes carry none (or no vocabulary is wired).
* Confidence: the share of a node's weighted degree that stays inside its community, in
  [0, 1]; an isolated node is its own community, with confidence 1.0 (nothing pulls it
  elsewhere).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

import networkx as nx

from fortemi.graph.traversal.models import GraphEdge, GraphNode

__all__ = ["LOUVAIN_SEED", "ConceptLabels", "assign_communities", "partition"]

LOUVAIN_SEED = 12
_MIN_WEIGHT = 1e-6


class ConceptLabels(Protocol):
    """What the traversal needs of the vocabulary (``VocabularyService`` provides it)."""

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID]
    ) -> dict[UUID, frozenset[UUID]]: ...

    async def labels(self, memory: str, concept_ids: Sequence[UUID]) -> dict[UUID, str]: ...


def partition(
    node_ids: Sequence[UUID], edges: Sequence[GraphEdge]
) -> tuple[dict[UUID, int], dict[UUID, float]]:
    """Each node's community id and confidence (see the module's docstring)."""
    graph: nx.Graph[UUID] = nx.Graph()
    graph.add_nodes_from(node_ids)
    for edge in edges:
        weight = max(edge.score, _MIN_WEIGHT)
        held = graph.get_edge_data(edge.source, edge.target)
        if held is None or held["weight"] < weight:
            graph.add_edge(edge.source, edge.target, weight=weight)
    found = nx.community.louvain_communities(graph, weight="weight", seed=LOUVAIN_SEED)
    position = {node: i for i, node in enumerate(node_ids)}
    ordered = sorted(found, key=lambda c: (-len(c), min(position[n] for n in c)))
    community = {node: i for i, members in enumerate(ordered) for node in members}
    confidence: dict[UUID, float] = {}
    for node in node_ids:
        total = inside = 0.0
        for other, data in graph[node].items():
            total += data["weight"]
            if community[other] == community[node]:
                inside += data["weight"]
        confidence[node] = 1.0 if total == 0 else inside / total
    return community, confidence


async def _labels(
    memory: str, community: dict[UUID, int], concepts: ConceptLabels
) -> dict[int, str]:
    carried = await concepts.concept_ids(memory, list(community))
    counts: dict[int, Counter[UUID]] = {}
    for note, concept_ids in carried.items():
        counts.setdefault(community[note], Counter()).update(concept_ids)
    winners = {
        group: min(counter.items(), key=lambda item: (-item[1], item[0]))[0]
        for group, counter in counts.items()
        if counter
    }
    if not winners:
        return {}
    names = await concepts.labels(memory, sorted(set(winners.values())))
    return {group: names[c] for group, c in winners.items() if c in names}


async def assign_communities(
    memory: str,
    nodes: Sequence[GraphNode],
    edges: Sequence[GraphEdge],
    concepts: ConceptLabels | None,
) -> list[GraphNode]:
    """``nodes`` with their community, its label and their confidence filled in."""
    community, confidence = partition([node.id for node in nodes], edges)
    labels = {} if concepts is None or not nodes else await _labels(memory, community, concepts)
    return [
        dataclasses.replace(
            node,
            community=community[node.id],
            community_label=labels.get(community[node.id]),
            community_confidence=confidence[node.id],
        )
        for node in nodes
    ]
