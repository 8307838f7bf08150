"""Attachments: the content-addressed blob rows, each attachment's metadata and extraction
record, and the chunks its extracted text was cut into. The bytes themselves live in the
blob store, outside the memory's tables; a shard does not carry them yet, which its loss
report says (``attachment-bytes-outside-shard``) whenever the memory has attachments."""

from __future__ import annotations

from fortemi.documents.shards.components.base import CORE, FULL, ColumnLoss, Component, Ref, Table

COMPONENT = Component(
    name="attachments",
    profiles=frozenset({CORE, FULL}),
    loss_code="attachments-outside-profile",
    description="attachment metadata, extraction records and blob digests (not the bytes)",
    tables=(
        Table(
            name="blob",
            key=("digest",),
            history=True,
            losses=tuple(
                ColumnLoss(
                    profile=profile,
                    columns=(),
                    code="attachment-bytes-outside-shard",
                    description="the attachments' bytes, kept in the blob store",
                    when="true",
                )
                for profile in (CORE, FULL)
            ),
        ),
        Table(
            name="attachment",
            key=("id",),
            refs=(
                Ref(("note_id",), "note"),
                Ref(("blob_digest",), "blob", ("digest",)),
                Ref(("extracted_from",), "attachment"),
            ),
            newer="extracted_at",
            tombstone="deleted_at",
        ),
        Table(
            name="attachment_chunk",
            key=("attachment_id", "ordinal"),
            refs=(Ref(("attachment_id",), "attachment"),),
        ),
    ),
)
