"""Document types and detection as clients see them.

* ``documentTypes(category)``, ``documentType(name)``: the memory's custom types, then the
  system ones (entering the memory: ``read``);
* ``detectDocumentType(filename, mimeType, content, contentEncoding)``: what a file is in
  this memory, by the cascade of :mod:`fortemi.documents.detection`. ``content`` is text
  (sent as UTF-8) or, with ``contentEncoding: BASE64``, any bytes; at most
  :data:`MAX_DETECT_BYTES` once decoded (only the first 8 KiB are read);
* ``chunkDocument``: the same detection, then the chunks the document would get and the
  strategy used (``strategyUsed``: ``syntactic:python``, ``code_fallback:kotlin``,
  ``default:markdown``);
* ``createDocumentType``, ``updateDocumentType``, ``deleteDocumentType``: memory ``admin``,
  decided and recorded before anything is looked up. System types are read-only:
  CONFLICT with ``reason: system_type_read_only``.

``Note.documentType`` (in :mod:`fortemi.graphql.notes.types`) is :func:`note_detection`.
"""

from __future__ import annotations

import base64
import binascii
from enum import Enum
from typing import Any

import strawberry

from fortemi.auth.decision import Action, Resource
from fortemi.documents import models
from fortemi.graphql.context import Info
from fortemi.platform.errors import BadUserInput
from fortemi.retrieval.chunking import MIN_SIZE as _MIN_CHUNK

__all__ = [
    "DocumentDetection",
    "DocumentType",
    "DocumentTypeMutation",
    "DocumentTypeQuery",
    "note_detection",
]

MAX_DETECT_BYTES = 65536
MAX_CHUNK_BYTES = 1_000_000


@strawberry.enum(description="What kind of document")
class DocumentCategory(Enum):
    CODE = "code"
    PROSE = "prose"
    DATA = "data"
    TABULAR = "tabular"
    MULTIMEDIA = "multimedia"
    DOCUMENTS = "documents"


@strawberry.enum(description="How a document of the type is cut into chunks")
class ChunkingStrategy(Enum):
    SYNTACTIC = "syntactic"
    SEMANTIC = "semantic"
    FIXED = "fixed"
    ADAPTIVE = "adaptive"


@strawberry.enum(description="How text is had from a file of the type")
class ExtractionStrategy(Enum):
    TEXT = "text"
    STRUCTURED = "structured"
    PDF = "pdf"
    OFFICE = "office"
    EMAIL = "email"
    HTML = "html"
    ARCHIVE = "archive"
    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    NONE = "none"


@strawberry.enum(description="The detection step that decided")
class DetectionMethod(Enum):
    FILENAME = "filename"
    FORMAT = "format"
    MIME = "mime"
    EXTENSION = "extension"
    MAGIC = "magic"
    SHEBANG = "shebang"
    STRUCTURE = "structure"
    FALLBACK = "fallback"
    MIME_MISMATCH = "mime_mismatch"
    NAME_MISMATCH = "name_mismatch"


@strawberry.enum(description="How `content` is sent")
class ContentEncoding(Enum):
    TEXT = "text"
    BASE64 = "base64"


@strawberry.type(description="Bytes (hex) at an offset")
class DocumentMagicOffset:
    at: int
    hex: str


@strawberry.type(description="A byte signature: `hex` at byte `at`, and the rest")
class DocumentMagic:
    hex: str
    at: int
    ignore_case: bool
    leading_space: bool
    also: list[DocumentMagicOffset]
    contains: list[str] = strawberry.field(description="Hex of bytes found anywhere")


@strawberry.type(description="A document type: system (read-only) or the memory's own")
class DocumentType:
    name: str
    display_name: str
    category: DocumentCategory
    description: str | None
    extensions: list[str]
    mime_types: list[str] = strawberry.field(description="The first is the canonical one")
    filename_patterns: list[str]
    magic: list[DocumentMagic]
    interpreters: list[str]
    aliases: list[str]
    chunking: ChunkingStrategy
    chunk_size: int
    chunk_overlap: int
    preserve_boundaries: bool
    extraction: ExtractionStrategy
    binary: bool
    container: str | None = strawberry.field(description="The type this one is a kind of")
    system: bool

    @classmethod
    def from_model(cls, t: models.DocumentType) -> DocumentType:
        return cls(
            name=t.name,
            display_name=t.display_name,
            category=DocumentCategory(t.category.value),
            description=t.description,
            extensions=list(t.extensions),
            mime_types=list(t.mime_types),
            filename_patterns=list(t.filename_patterns),
            magic=[
                DocumentMagic(
                    hex=m.data.hex(),
                    at=m.at,
                    ignore_case=m.ignore_case,
                    leading_space=m.leading_space,
                    also=[DocumentMagicOffset(at=at, hex=data.hex()) for at, data in m.also],
                    contains=[c.hex() for c in m.contains],
                )
                for m in t.magic
            ],
            interpreters=list(t.interpreters),
            aliases=list(t.aliases),
            chunking=ChunkingStrategy(t.chunking.value),
            chunk_size=t.chunk_size,
            chunk_overlap=t.chunk_overlap,
            preserve_boundaries=t.preserve_boundaries,
            extraction=ExtractionStrategy(t.extraction.value),
            binary=t.binary,
            container=t.container,
            system=t.system,
        )


@strawberry.type(description="What a document was taken for, how, and how sure")
class DocumentDetection:
    name: str = strawberry.field(description="The document type's name")
    confidence: float = strawberry.field(
        description="1.0 filename pattern, 0.95 declared format or MIME type, 0.9 "
        "extension, 0.7 content (and contradicted claims), 0.1 nothing matched"
    )
    method: DetectionMethod
    flagged_for_review: bool = strawberry.field(
        description="Confidence from 0.7 up to 0.9, or a claim the content contradicts"
    )
    strategy: ChunkingStrategy = strawberry.field(
        description="The chunking that applies: the type's own from 0.7, else SEMANTIC"
    )
    claimed: str | None = strawberry.field(
        description="The type a declared MIME type or name claimed that the content's "
        "signature contradicts (method MIME_MISMATCH or NAME_MISMATCH)"
    )
    type: DocumentType

    @classmethod
    def from_model(cls, d: models.Detection) -> DocumentDetection:
        return cls(
            name=d.type.name,
            confidence=d.confidence,
            method=DetectionMethod(d.method.value),
            flagged_for_review=d.flagged_for_review,
            strategy=ChunkingStrategy(d.strategy.value),
            claimed=d.claimed,
            type=DocumentType.from_model(d.type),
        )


@strawberry.type(description="A slice of a document: text == content[start:end]")
class DocumentChunk:
    ordinal: int
    text: str
    start: int
    end: int
    heading: str | None = strawberry.field(description="Definition or heading path")


@strawberry.type(description="A document's detection and the chunks it would get")
class ChunkedDocument:
    detection: DocumentDetection
    strategy_used: str = strawberry.field(
        description="syntactic:<type> (parsed), code_fallback:<type> (code without a "
        "grammar here: the line-based code chunker), default:<format> (everything else)"
    )
    chunks: list[DocumentChunk]


@strawberry.input(description="Bytes at an offset, as text (one byte per character)")
class MagicOffsetInput:
    at: int
    text: str


@strawberry.input(description="A byte signature: exactly one of hex and text")
class MagicInput:
    hex: str | None = None
    text: str | None = strawberry.field(
        default=None, description="Characters U+0000-U+00FF, one byte each"
    )
    at: int = 0
    ignore_case: bool = False
    leading_space: bool = strawberry.field(
        default=False, description="May follow a byte-order mark and whitespace"
    )
    also: list[MagicOffsetInput] | None = None
    contains: list[str] | None = None


@strawberry.input(description="A custom document type; unset fields take the category's defaults")
class DocumentTypeInput:
    name: str = strawberry.field(description="[a-z0-9][a-z0-9_.+-]*, not a system type's")
    display_name: str
    category: DocumentCategory
    description: str | None = None
    extensions: list[str] | None = None
    mime_types: list[str] | None = None
    filename_patterns: list[str] | None = None
    magic: list[MagicInput] | None = None
    interpreters: list[str] | None = None
    aliases: list[str] | None = None
    chunking: ChunkingStrategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    preserve_boundaries: bool | None = None
    extraction: ExtractionStrategy | None = None
    binary: bool | None = None
    container: str | None = None


@strawberry.input(description="Changes to a custom document type; unset fields stay")
class DocumentTypePatch:
    display_name: str | None = None
    category: DocumentCategory | None = None
    description: str | None = None
    extensions: list[str] | None = None
    mime_types: list[str] | None = None
    filename_patterns: list[str] | None = None
    magic: list[MagicInput] | None = None
    interpreters: list[str] | None = None
    aliases: list[str] | None = None
    chunking: ChunkingStrategy | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    preserve_boundaries: bool | None = None
    extraction: ExtractionStrategy | None = None
    binary: bool | None = None
    container: str | None = None


def _magic(m: MagicInput) -> dict[str, Any]:
    return {
        "hex": m.hex,
        "text": m.text,
        "at": m.at,
        "ignore_case": m.ignore_case,
        "leading_space": m.leading_space,
        "also": [(a.at, a.text) for a in m.also or []],
        "contains": list(m.contains or []),
    }


def _definition(given: DocumentTypeInput | DocumentTypePatch) -> dict[str, Any]:
    """The input as the registry's definition mapping (enums as their values)."""
    out: dict[str, Any] = {}
    for key, value in vars(given).items():
        if value is None:
            continue
        if key == "magic":
            value = [_magic(m) for m in value]
        elif isinstance(value, Enum):
            value = value.value
        out[key] = value
    return out


def _content(content: str | None, encoding: ContentEncoding, bound: int) -> bytes:
    if content is None:
        return b""
    if encoding is ContentEncoding.BASE64:
        if len(content) > (bound * 4) // 3 + 8:
            raise _too_large(bound)
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise BadUserInput(
                "content is not valid base64 (RFC 4648, standard alphabet, padded)",
                field="content",
                reason="invalid_base64",
            ) from None
    else:
        data = content.encode("utf-8", errors="surrogatepass")
    if len(data) > bound:
        raise _too_large(bound)
    return data


def _too_large(bound: int) -> BadUserInput:
    return BadUserInput(
        f"content is limited to {bound} bytes here; detection reads only the first 8192",
        field="content",
        reason="too_large",
    )


async def _admin_memory(info: Info) -> str:
    memory = await info.context.memory()
    await info.context.authorize(Action.ADMIN, Resource.of_memory(memory))
    return memory


async def note_detection(
    info: Info, memory: str, *, path: str | None, format: str, content: str
) -> DocumentDetection:
    found = await info.context.services.documents.detect_note(
        memory, path=path, format=format, content=content
    )
    return DocumentDetection.from_model(found)


@strawberry.type
class DocumentTypeQuery:
    @strawberry.field(description="The memory's custom document types, then the system ones")
    async def document_types(
        self, info: Info, category: DocumentCategory | None = None
    ) -> list[DocumentType]:
        memory = await info.context.memory()
        found = await info.context.services.documents.list(
            memory, None if category is None else models.Category(category.value)
        )
        return [DocumentType.from_model(t) for t in found]

    @strawberry.field(description="A document type by name: system or this memory's")
    async def document_type(self, info: Info, name: str) -> DocumentType | None:
        memory = await info.context.memory()
        found = await info.context.services.documents.get(memory, name)
        return None if found is None else DocumentType.from_model(found)

    @strawberry.field(
        description="What a file is: filename pattern, declared MIME type, extension, then "
        "its content (text, or base64 with contentEncoding BASE64; first 8 KiB read)"
    )
    async def detect_document_type(
        self,
        info: Info,
        filename: str | None = None,
        mime_type: str | None = None,
        content: str | None = None,
        content_encoding: ContentEncoding = ContentEncoding.TEXT,
    ) -> DocumentDetection:
        data = _content(content, content_encoding, MAX_DETECT_BYTES)
        memory = await info.context.memory()
        found = await info.context.services.documents.detect_in(memory, filename, mime_type, data)
        return DocumentDetection.from_model(found)

    @strawberry.field(
        description="A text document's detection and the chunks it would get (up to 1 MB; "
        f"size: at least {_MIN_CHUNK} characters, default the type's chunk size)"
    )
    async def chunk_document(
        self,
        info: Info,
        content: str,
        filename: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
    ) -> ChunkedDocument:
        data = _content(content, ContentEncoding.TEXT, MAX_CHUNK_BYTES)
        if size is not None and not _MIN_CHUNK <= size <= 20000:
            raise BadUserInput(f"size must be from {_MIN_CHUNK} to 20000 characters", field="size")
        memory = await info.context.memory()
        documents = info.context.services.documents
        found = await documents.detect_in(memory, filename, mime_type, data)
        chunked = documents.chunk(content, found, size=size)
        return ChunkedDocument(
            detection=DocumentDetection.from_model(found),
            strategy_used=chunked.strategy_used,
            chunks=[
                DocumentChunk(
                    ordinal=c.ordinal, text=c.text, start=c.start, end=c.end, heading=c.heading
                )
                for c in chunked.chunks
            ],
        )


@strawberry.type
class DocumentTypeMutation:
    @strawberry.mutation(description="Add a custom document type to this memory (admin)")
    async def create_document_type(self, info: Info, input: DocumentTypeInput) -> DocumentType:
        memory = await _admin_memory(info)
        created = await info.context.services.documents.create(
            memory, _definition(input), info.context.caller.sub
        )
        return DocumentType.from_model(created)

    @strawberry.mutation(description="Change a custom document type of this memory (admin)")
    async def update_document_type(
        self, info: Info, name: str, input: DocumentTypePatch
    ) -> DocumentType:
        memory = await _admin_memory(info)
        updated = await info.context.services.documents.update(
            memory, name, _definition(input), info.context.caller.sub
        )
        return DocumentType.from_model(updated)

    @strawberry.mutation(description="Remove a custom document type of this memory (admin)")
    async def delete_document_type(self, info: Info, name: str) -> bool:
        memory = await _admin_memory(info)
        await info.context.services.documents.delete(memory, name)
        return True
