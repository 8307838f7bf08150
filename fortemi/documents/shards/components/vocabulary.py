"""The SKOS vocabulary: schemes, concepts, labels, notes, relations, collections and the
concepts attached to notes."""

from __future__ import annotations

from fortemi.documents.shards.components.base import FULL, Component, Ref, Table

_CONCEPT = Ref(("concept_id",), "concept")

COMPONENT = Component(
    name="vocabulary",
    profiles=frozenset({FULL}),
    loss_code="vocabulary-outside-profile",
    description="concept schemes, concepts, labels, relations, collections, note concepts",
    tables=(
        Table(name="concept_scheme", key=("id",)),
        Table(
            name="concept",
            key=("id",),
            refs=(Ref(("scheme_id",), "concept_scheme"),),
            newer="updated_at",
        ),
        Table(
            name="concept_label",
            key=("concept_id", "kind", "lang", "label"),
            refs=(_CONCEPT,),
            # the primary key holds the generated lower(label), which rows do not carry
            target=("concept_id", "kind", "lang", "key"),
            match="t.concept_id = x.concept_id AND t.kind = x.kind AND t.lang = x.lang "
            "AND t.key = lower(x.label)",
        ),
        Table(name="concept_note", key=("concept_id", "kind", "lang"), refs=(_CONCEPT,)),
        Table(
            name="concept_relation",
            key=("source_id", "kind", "target_id"),
            refs=(Ref(("source_id",), "concept"), Ref(("target_id",), "concept")),
        ),
        Table(
            name="concept_collection",
            key=("id",),
            refs=(Ref(("scheme_id",), "concept_scheme"),),
        ),
        Table(
            name="concept_collection_member",
            key=("collection_id", "concept_id"),
            refs=(Ref(("collection_id",), "concept_collection"), _CONCEPT),
        ),
        Table(
            name="note_concept",
            key=("note_id", "concept_id"),
            refs=(Ref(("note_id",), "note"), _CONCEPT),
        ),
        # the note version the tagging chain last finished on: without it the graph's
        # backfill would tag every imported note again
        Table(name="note_tagged", key=("note_id",), refs=(Ref(("note_id",), "note"),)),
    ),
)
