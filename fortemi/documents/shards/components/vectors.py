"""Chunks and their vectors, and note vectors: derived data an Embedding or Linking job
can recompute, so an export may leave it out (``vectors=False``) and say so."""

from __future__ import annotations

from fortemi.documents.shards.components.base import FULL, Component, Ref, Table

_NOTE = Ref(("note_id",), "note")
_SET = Ref(("set_id",), "embedding_set")

COMPONENT = Component(
    name="vectors",
    profiles=frozenset({FULL}),
    loss_code="vectors-outside-profile",
    description="chunks, chunk vectors and note vectors",
    optional="vectors",
    tables=(
        Table(name="chunk", key=("id",), refs=(_NOTE,), identity="id"),
        Table(
            name="chunk_embedding",
            key=("set_id", "chunk_id"),
            refs=(_SET, Ref(("chunk_id",), "chunk"), _NOTE),
        ),
        Table(name="note_embedding", key=("set_id", "note_id"), refs=(_SET, _NOTE)),
    ),
)
