"""Notes: ids, titles, content, format, metadata, tags, projects, skills, flags,
timestamps and tombstones (``deleted_at`` rows travel as tombstones)."""

from __future__ import annotations

from fortemi.documents.shards.components.base import CORE, FULL, ColumnLoss, Component, Table

COMPONENT = Component(
    name="notes",
    profiles=frozenset({CORE, FULL}),
    loss_code="notes-outside-profile",
    description="notes",
    tables=(
        Table(
            name="note",
            key=("id",),
            newer="updated_at",
            tombstone="deleted_at",
            losses=(
                ColumnLoss(
                    profile=CORE,
                    columns=("external_source", "external_id"),
                    code="source-identity-outside-profile",
                    description="the external source and id notes were imported from",
                    when="external_source IS NOT NULL",
                ),
            ),
        ),
    ),
)
