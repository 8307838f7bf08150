"""Attachments: the content-addressed blob rows, each attachment's metadata and extraction
record, and the chunks its extracted text was cut into. The bytes themselves live in the
blob store, outside the memory's tables: they travel as ``blobs/<digest>`` members beside
the components (:mod:`fortemi.documents.shards.blobs`) in ``full-v1``, and in ``core-v1``
only when asked for; otherwise the loss report names ``attachment-bytes-outside-profile``."""

from __future__ import annotations

from fortemi.documents.shards.components.base import CORE, FULL, Component, Ref, Table

COMPONENT = Component(
    name="attachments",
    profiles=frozenset({CORE, FULL}),
    loss_code="attachments-outside-profile",
    description="attachment metadata, extraction records and blob digests (not the bytes)",
    tables=(
        Table(name="blob", key=("digest",), history=True),
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
