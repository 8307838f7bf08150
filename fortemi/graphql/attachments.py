"""Attachments: files uploaded with the GraphQL multipart request spec, and their state.

``attachFile`` and ``createNoteFromFile`` take an ``Upload`` (a multipart request, see
https://github.com/jaydenseric/graphql-multipart-request-spec); the bytes are streamed
to the blob store, never held whole. They need ``write`` on the note (for a new note, on
where it is created), asked after the note is found: a note the caller may not read is
NOT_FOUND, never FORBIDDEN. ``attachment(id)`` answers null for an attachment that is
absent or whose note the caller may not read. Bytes are downloaded from
``GET /attachments/{id}`` (:mod:`fortemi.graphql.downloads`), never through GraphQL.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import cast
from uuid import UUID

import strawberry
from strawberry.file_uploads import Upload
from strawberry.scalars import JSON

from fortemi.auth.decision import Action, Resource
from fortemi.documents.attachments import models
from fortemi.documents.attachments.intake import Readable
from fortemi.graphql.context import Info
from fortemi.graphql.documents import DetectionMethod
from fortemi.graphql.notes.inputs import CreateNoteInput
from fortemi.graphql.notes.types import Note
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.ids import parse_id, parse_note_id, to_global_id
from fortemi.platform.notes import NoteDraft, note_event

__all__ = [
    "Attachment",
    "AttachmentMutation",
    "AttachmentQuery",
    "note_attachments",
    "parse_attachment_id",
]


def _readable(file: Upload) -> Readable:
    """The upload as Starlette hands it (an ``UploadFile``, spooled to disk past 1 MB);
    a value sent in JSON instead of a file part is the caller's mistake."""
    if not callable(getattr(file, "read", None)):
        raise BadUserInput(
            "file: send the file as a part of a multipart request (the GraphQL multipart "
            "request spec), mapped to this variable",
            field="file",
            reason="not_a_file",
        )
    return cast(Readable, file)


def parse_attachment_id(value: str) -> UUID:
    return parse_id(value, "Attachment")


@strawberry.enum(description="Where an attachment's extraction stands")
class ExtractionStatus(Enum):
    PENDING = "pending"
    DONE = "done"
    SKIPPED = "skipped"
    FAILED = "failed"


@strawberry.type(description="What an attachment was taken for at upload, how, and how sure")
class AttachmentDocumentType:
    name: str
    confidence: float
    method: DetectionMethod


@strawberry.type(description="A file kept with a note")
class Attachment:
    id: strawberry.ID
    note_id: strawberry.ID
    filename: str
    size: int = strawberry.field(description="Bytes")
    digest: str = strawberry.field(description="BLAKE3 of the content, hex")
    mime_declared: str | None = strawberry.field(description="The MIME type the upload named")
    mime_detected: str = strawberry.field(description="The detected type's MIME type")
    document_type: AttachmentDocumentType
    extraction_status: ExtractionStatus
    extraction_reason: str | None = strawberry.field(
        description="Why SKIPPED or FAILED, as `code: detail`"
    )
    preview: str | None
    metadata: JSON = strawberry.field(description="What extraction found: counts, keys, pages...")
    extracted_from: strawberry.ID | None = strawberry.field(
        description="The attachment this one was found in (an e-mail's attachment)"
    )
    download_path: str = strawberry.field(
        description="GET it with the same Authorization and X-Fortemi-Memory headers"
    )
    created_at: datetime | None
    deleted_at: datetime | None

    @classmethod
    def from_model(cls, a: models.Attachment) -> Attachment:
        return cls(
            id=strawberry.ID(to_global_id("Attachment", a.id)),
            note_id=strawberry.ID(to_global_id("Note", a.note_id)),
            filename=a.filename,
            size=a.size,
            digest=a.blob_digest,
            mime_declared=a.mime_declared,
            mime_detected=a.mime_detected,
            document_type=AttachmentDocumentType(
                name=a.document_type,
                confidence=a.detection_confidence,
                method=DetectionMethod(a.detection_method),
            ),
            extraction_status=ExtractionStatus(a.extraction_status.value),
            extraction_reason=a.extraction_reason,
            preview=a.preview,
            metadata=JSON(a.extraction_metadata),
            extracted_from=(
                strawberry.ID(to_global_id("Attachment", a.extracted_from))
                if a.extracted_from
                else None
            ),
            download_path=f"/attachments/{a.id}",
            created_at=a.created_at,
            deleted_at=a.deleted_at,
        )


@strawberry.type(description="The note made from a file, and the file attached to it")
class CreateNoteFromFilePayload:
    note: Note
    attachment: Attachment


async def note_attachments(info: Info, memory: str, note_id: UUID) -> list[Attachment]:
    """A readable note's attachments (the caller resolved the note, so may read it)."""
    found = await info.context.services.attachments.for_note(memory, note_id)
    return [Attachment.from_model(a) for a in found]


async def _readable_attachment(info: Info, attachment_id: UUID) -> tuple[str, models.Attachment]:
    """The attachment, or NOT_FOUND when absent or when its note is unreadable."""
    memory = await info.context.memory()
    found = await info.context.services.attachments.get(memory, attachment_id)
    if found is None:
        raise NotFound(f"No attachment {attachment_id} in this memory", id=str(attachment_id))
    try:
        await info.context.readable_note(found.note_id)
    except NotFound:
        raise NotFound(
            f"No attachment {attachment_id} in this memory", id=str(attachment_id)
        ) from None
    return memory, found


@strawberry.type
class AttachmentQuery:
    @strawberry.field(description="An attachment by id; null if absent or its note unreadable")
    async def attachment(self, info: Info, id: strawberry.ID) -> Attachment | None:
        try:
            _, found = await _readable_attachment(info, parse_attachment_id(id))
        except NotFound:
            return None
        return Attachment.from_model(found)


@strawberry.type
class AttachmentMutation:
    @strawberry.mutation(
        description="Attach a file (multipart request) to a note; needs write on the note. "
        "Over FORTEMI_MAX_UPLOAD_BYTES: BAD_USER_INPUT, reason file_too_large"
    )
    async def attach_file(self, info: Info, note_id: strawberry.ID, file: Upload) -> Attachment:
        context = info.context
        memory, note = await context.readable_note(parse_note_id(note_id))
        await context.authorize(Action.WRITE, Resource.of_note(memory, note.project, note.skill))
        attachment = await context.services.attachments.attach(
            memory,
            note.id,
            _readable(file),
            filename=getattr(file, "filename", None),
            declared_mime=getattr(file, "content_type", None),
            actor=context.caller.sub,
        )
        return Attachment.from_model(attachment)

    @strawberry.mutation(
        description="A new note holding the file (titled after it unless input has a title)"
    )
    async def create_note_from_file(
        self, info: Info, file: Upload, input: CreateNoteInput | None = None
    ) -> CreateNoteFromFilePayload:
        context = info.context
        draft = input.to_model() if input is not None else NoteDraft()
        memory = await context.memory()
        await context.authorize(Action.WRITE, Resource.of_note(memory, draft.project, draft.skill))
        note, attachment = await context.services.attachments.create_note_from_file(
            memory,
            draft,
            _readable(file),
            filename=getattr(file, "filename", None),
            declared_mime=getattr(file, "content_type", None),
            actor=context.caller.sub,
        )
        await context.notify(note_event("created", memory, note, context.caller.sub))
        return CreateNoteFromFilePayload(
            note=Note.from_model(note), attachment=Attachment.from_model(attachment)
        )

    @strawberry.mutation(
        description="Remove an attachment for good (its bytes go when nothing else uses them)"
    )
    async def delete_attachment(self, info: Info, id: strawberry.ID) -> Attachment:
        context = info.context
        memory, found = await _readable_attachment(info, parse_attachment_id(id))
        _, note = await context.readable_note(found.note_id)
        await context.authorize(Action.WRITE, Resource.of_note(memory, note.project, note.skill))
        removed = await context.services.attachments.delete(memory, found.id)
        return Attachment.from_model(removed)
