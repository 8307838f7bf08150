"""Traversal: a note's neighbourhood over explicit, wiki and semantic links."""

from fortemi.graph.traversal.communities import ConceptLabels
from fortemi.graph.traversal.models import (
    GRAPH_VERSION,
    EdgeColumns,
    EdgeKind,
    GraphEdge,
    GraphMeta,
    GraphNode,
    GraphParams,
    GraphRequest,
    Neighbourhood,
    NeighbourhoodColumns,
    NodeColumns,
)
from fortemi.graph.traversal.service import TraversalService

__all__ = [
    "GRAPH_VERSION",
    "ConceptLabels",
    "EdgeColumns",
    "EdgeKind",
    "GraphEdge",
    "GraphMeta",
    "GraphNode",
    "GraphParams",
    "GraphRequest",
    "Neighbourhood",
    "NeighbourhoodColumns",
    "NodeColumns",
    "TraversalService",
]
