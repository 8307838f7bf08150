"""Embedding sets: model, dimension and document composition of each set."""

from __future__ import annotations

from fortemi.documents.shards.components.base import FULL, Component, Table

COMPONENT = Component(
    name="embedding_sets",
    profiles=frozenset({FULL}),
    loss_code="embedding-sets-outside-profile",
    description="embedding sets (model, dimension, composition)",
    tables=(Table(name="embedding_set", key=("id",), identity="id"),),
)
