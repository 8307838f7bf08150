"""Note history: the content each note was created with and every version it has had.
Both are immutable: an import adds missing history, never changes any."""

from __future__ import annotations

from fortemi.documents.shards.components.base import FULL, Component, Ref, Table

_NOTE = (Ref(("note_id",), "note"),)

COMPONENT = Component(
    name="versions",
    profiles=frozenset({FULL}),
    loss_code="versions-outside-profile",
    description="note originals and versions (history)",
    tables=(
        Table(name="note_original", key=("note_id",), refs=_NOTE, history=True),
        Table(name="note_version", key=("note_id", "version"), refs=_NOTE, history=True),
    ),
)
