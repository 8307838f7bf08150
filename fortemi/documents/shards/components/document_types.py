"""The memory's custom document types (system types ship with the package)."""

from __future__ import annotations

from fortemi.documents.shards.components.base import FULL, Component, Table

COMPONENT = Component(
    name="document_types",
    profiles=frozenset({FULL}),
    loss_code="document-types-outside-profile",
    description="custom document types",
    tables=(Table(name="document_type", key=("name",), newer="updated_at"),),
)
