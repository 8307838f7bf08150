"""What a document type is, and what detecting one answers.

A :class:`DocumentType` is data: the system's come from ``types.yaml`` beside this module
(:mod:`fortemi.documents.registry` loads and validates them once), a memory's custom ones
from its ``document_type`` table. A :class:`Detection` names the type a file was taken for,
how (:class:`Method`) and how sure (``confidence``), and what follows for chunking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "REVIEW_BELOW",
    "STRATEGY_FROM",
    "Category",
    "ChunkingStrategy",
    "Detection",
    "DocumentType",
    "Extraction",
    "Magic",
    "Method",
]

# At or above STRATEGY_FROM the type's own chunking strategy applies; from 0.7 up to
# REVIEW_BELOW it still applies but the detection is flagged for a person to review; below
# 0.7 the document is chunked semantically, as prose, whatever it was taken for.
STRATEGY_FROM = 0.7
REVIEW_BELOW = 0.9


class Category(Enum):
    CODE = "code"
    PROSE = "prose"
    DATA = "data"
    TABULAR = "tabular"
    MULTIMEDIA = "multimedia"
    DOCUMENTS = "documents"


class ChunkingStrategy(Enum):
    SYNTACTIC = "syntactic"  # at the language's function and class boundaries
    SEMANTIC = "semantic"  # at headings, paragraphs and sentences
    FIXED = "fixed"  # fixed-size pieces with overlap
    ADAPTIVE = "adaptive"  # by the structure the extracted text turns out to have


class Extraction(Enum):
    """How text is had from a file of the type (the extraction adapters dispatch on it)."""

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


class Method(Enum):
    """How a detection decided, in cascade order."""

    FILENAME = "filename"  # a filename pattern (Dockerfile, package.json, *.d.ts)
    FORMAT = "format"  # a note's declared format (its author's word, like a MIME type)
    MIME = "mime"  # the declared MIME type
    EXTENSION = "extension"
    MAGIC = "magic"  # a byte signature in the content
    SHEBANG = "shebang"  # #! and the interpreter it names
    STRUCTURE = "structure"  # the content parses as JSON, YAML, XML, HTML, CSV, markdown
    FALLBACK = "fallback"  # nothing matched: plaintext for text, binary for anything else
    # The declared MIME type (or the name) says one type and a strong byte signature
    # another: the content's type is answered and the claim kept in ``Detection.claimed``.
    MIME_MISMATCH = "mime_mismatch"
    NAME_MISMATCH = "name_mismatch"


@dataclass(frozen=True, slots=True)
class Magic:
    """A byte signature: ``data`` at byte ``at``, every ``also`` (offset, bytes) too, and
    every ``contains`` anywhere in the prefix read. ``leading_space``: text signatures may
    follow a byte-order mark and whitespace. ``specificity`` ranks rival matches."""

    data: bytes
    at: int = 0
    ignore_case: bool = False
    leading_space: bool = False
    also: tuple[tuple[int, bytes], ...] = ()
    contains: tuple[bytes, ...] = ()

    @property
    def specificity(self) -> int:
        return len(self.data) + sum(len(b) for _, b in self.also) + sum(map(len, self.contains))


@dataclass(frozen=True, slots=True)
class DocumentType:
    name: str
    display_name: str
    category: Category
    extensions: tuple[str, ...] = ()  # lower case, with the dot: ".py", ".tar.gz"
    mime_types: tuple[str, ...] = ()  # lower case; the first is the canonical one
    magic: tuple[Magic, ...] = ()
    filename_patterns: tuple[str, ...] = ()  # basenames or globs: Dockerfile, *.d.ts, .env.*
    interpreters: tuple[str, ...] = ()  # what a #! line names: python, node, bash
    aliases: tuple[str, ...] = ()  # other names a note's format may use: py, golang
    chunking: ChunkingStrategy = ChunkingStrategy.SEMANTIC
    chunk_size: int = 1000
    chunk_overlap: int = 100
    preserve_boundaries: bool = True
    extraction: Extraction = Extraction.TEXT
    binary: bool = False  # its content is not text
    container: str | None = None  # the type it is a kind of (docx: zip), for MIME checks
    system: bool = True
    description: str | None = field(default=None, compare=False)

    @property
    def mime_type(self) -> str:
        return self.mime_types[0] if self.mime_types else "application/octet-stream"


@dataclass(frozen=True, slots=True)
class Detection:
    """What :func:`~fortemi.documents.detection.detect` took a file for."""

    type: DocumentType
    confidence: float
    method: Method
    claimed: str | None = None  # the type a contradicted MIME type or name claimed

    @property
    def flagged_for_review(self) -> bool:
        return STRATEGY_FROM <= self.confidence < REVIEW_BELOW or self.claimed is not None

    @property
    def strategy(self) -> ChunkingStrategy:
        """The chunking that applies: the type's own when the detection is sure enough."""
        if self.confidence >= STRATEGY_FROM:
            return self.type.chunking
        return ChunkingStrategy.SEMANTIC
