"""Links between notes (explicit, wiki, semantic), the wiki references behind them with
their candidate keys, and the keys a wiki reference finds a note by."""

from __future__ import annotations

from fortemi.documents.shards.components.base import CORE, FULL, ColumnLoss, Component, Ref, Table

COMPONENT = Component(
    name="links",
    profiles=frozenset({CORE, FULL}),
    loss_code="links-outside-profile",
    description="note links, wiki references and wiki keys",
    tables=(
        Table(
            name="note_link",
            key=("source_id", "kind", "target_id"),
            refs=(
                Ref(("source_id",), "note"),
                Ref(("target_id",), "note"),
                Ref(("set_id",), "embedding_set"),
            ),
            newer="computed_at",
            losses=(
                ColumnLoss(
                    profile=CORE,
                    columns=("set_id",),
                    code="link-embedding-set-outside-profile",
                    description="the embedding set semantic links were computed in",
                    when="set_id IS NOT NULL",
                ),
            ),
        ),
        Table(
            name="wiki_link",
            key=("source_id", "ordinal"),
            refs=(Ref(("source_id",), "note"), Ref(("target_id",), "note")),
        ),
        Table(
            name="wiki_link_candidate",
            key=("source_id", "ordinal", "rank"),
            refs=(Ref(("source_id", "ordinal"), "wiki_link", ("source_id", "ordinal")),),
        ),
        Table(
            name="note_wiki_key", key=("note_id", "kind", "key"), refs=(Ref(("note_id",), "note"),)
        ),
    ),
)
