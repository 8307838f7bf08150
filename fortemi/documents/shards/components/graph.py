"""The graph's derived state: Louvain communities of the last maintenance run and the
diagnostics snapshot of every run that wrote."""

from __future__ import annotations

from fortemi.documents.shards.components.base import FULL, Component, Ref, Table

COMPONENT = Component(
    name="graph",
    profiles=frozenset({FULL}),
    loss_code="graph-outside-profile",
    description="note communities, communities and maintenance snapshots",
    tables=(
        Table(
            name="note_community",
            key=("note_id",),
            refs=(Ref(("note_id",), "note"),),
            newer="computed_at",
        ),
        Table(
            name="graph_community",
            key=("community",),
            refs=(Ref(("concept_id",), "concept"),),
            newer="computed_at",
        ),
        Table(name="graph_snapshot", key=("id",), identity="id", history=True),
    ),
)
