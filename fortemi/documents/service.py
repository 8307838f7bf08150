"""Document types of a memory, and what a file is: the service the rest of the system uses.

* :meth:`DocumentTypeService.detect` runs the detection cascade
  (:mod:`fortemi.documents.detection`) over the system types; :meth:`detect_in` over a
  memory's custom types first, then the system ones (a custom type wins over a system
  type at the same step: same extension, MIME type, equally specific pattern or signature).
* :meth:`~DocumentTypeService.chunking_for` is the chunking strategy lookup, and
  :meth:`~DocumentTypeService.chunker` the syntactic chunker over a fallback.
* Custom types: list, get, create, update, delete. System types are read-only: changing or
  deleting one, or creating a custom type under a system type's name, is CONFLICT with
  ``reason`` ``system_type_read_only``. Authorization (memory ``admin`` for changes) is
  the caller's: this service trusts what it is asked.

Errors: BadUserInput naming the invalid field, Conflict, NotFound (no such custom type).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from fortemi.documents.chunking import Chunked, CodeChunker, FallbackChunker
from fortemi.documents.detection import PREFIX_BYTES, detect
from fortemi.documents.models import Category, ChunkingStrategy, Detection, DocumentType
from fortemi.documents.registry import TypeIndex, parse_type, system_index, validate
from fortemi.documents.repository import DocumentTypeRepository, StoredType
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound

__all__ = ["CUSTOM_TYPES_TTL", "DocumentTypeService"]

# How long a process answers from a memory's custom types as it last read them: a change
# made through this process is seen at once (the cache entry is dropped), one made through
# another process within this many seconds.
CUSTOM_TYPES_TTL = 5.0


def _read_only(name: str) -> Conflict:
    return Conflict(
        f"{name!r} is a system document type and cannot be changed; create a custom type "
        "with its own name (it is tried before system types)",
        reason="system_type_read_only",
        name=name,
    )


class DocumentTypeService:
    def __init__(self, db: Database, fallback: FallbackChunker) -> None:
        self._db = db
        self._chunker = CodeChunker(fallback, system_index())
        self._repository = DocumentTypeRepository()
        self._indexes: dict[str, tuple[float, TypeIndex]] = {}

    # -- detection and chunking ---------------------------------------------------------

    @property
    def system(self) -> TypeIndex:
        return system_index()

    def detect(
        self,
        filename: str | None,
        declared_mime: str | None,
        content_prefix: bytes,
        *,
        format: str | None = None,
    ) -> Detection:
        """What a file is among the system types (first :data:`PREFIX_BYTES` read)."""
        return detect(self.system, filename, declared_mime, content_prefix, format=format)

    async def detect_in(
        self,
        memory: str,
        filename: str | None,
        declared_mime: str | None,
        content_prefix: bytes,
        *,
        format: str | None = None,
    ) -> Detection:
        """What a file is in ``memory``: its custom types first, then the system's."""
        index = await self.index_for(memory)
        return detect(index, filename, declared_mime, content_prefix, format=format)

    async def detect_note(
        self, memory: str, *, path: str | None, format: str, content: str
    ) -> Detection:
        """A note's type: from its path (vault notes), its format, then its content."""
        prefix = content[:PREFIX_BYTES].encode("utf-8")[:PREFIX_BYTES]
        return await self.detect_in(memory, path, None, prefix, format=format)

    def chunking_for(self, name: str) -> DocumentType:
        """The system type ``name`` with its chunking strategy, size, overlap and whether
        boundaries are preserved; NotFound for a name no system type has."""
        found = self.system.get(name)
        if found is None:
            raise NotFound(f"No system document type {name!r}", name=name)
        return found

    @property
    def chunker(self) -> CodeChunker:
        """Chunks by type: syntactically for the languages with a grammar, else through
        the fallback (retrieval's chunker), which sees everything but code unchanged."""
        return self._chunker

    def chunk(self, text: str, detection: Detection, *, size: int | None = None) -> Chunked:
        """``text`` chunked as detected: the type's strategy (and size and overlap, unless
        ``size`` is given) when the detection is sure enough, else as prose."""
        kind = detection.type
        chunk_size = size or kind.chunk_size
        overlap = min(kind.chunk_overlap, (chunk_size - 1) // 2)
        if (
            detection.strategy is ChunkingStrategy.SEMANTIC
            and kind.chunking is not ChunkingStrategy.SEMANTIC
        ):
            return self._chunker.chunk(text, format="text", size=chunk_size, overlap=overlap)
        return self._chunker.chunk(text, type=kind, size=chunk_size, overlap=overlap)

    async def index_for(self, memory: str) -> TypeIndex:
        cached = self._indexes.get(memory)
        now = time.monotonic()
        if cached is not None and now - cached[0] < CUSTOM_TYPES_TTL:
            return cached[1]
        async with self._db.memory_transaction(memory) as conn:
            stored = await self._repository.list(conn)
        index = TypeIndex([_custom(row) for row in stored], self.system.types)
        self._indexes[memory] = (now, index)
        return index

    # -- the registry -------------------------------------------------------------------

    async def list(self, memory: str, category: Category | None = None) -> list[DocumentType]:
        """The memory's custom types, then the system ones, each by name."""
        index = await self.index_for(memory)
        custom = sorted((t for t in index.types if not t.system), key=lambda t: t.name)
        system = sorted(self.system.types, key=lambda t: t.name)
        return [t for t in (*custom, *system) if category is None or t.category is category]

    async def get(self, memory: str, name: str) -> DocumentType | None:
        found = self.system.get(name)
        if found is not None:
            return found
        async with self._db.memory_transaction(memory) as conn:
            row = await self._repository.get(conn, name)
        return None if row is None else _custom(row)

    async def create(self, memory: str, definition: Mapping[str, Any], actor: str) -> DocumentType:
        name = str(definition.get("name", ""))
        if self.system.get(name) is not None:
            raise _read_only(name)
        spec = validate(definition)
        async with self._db.memory_transaction(memory, subject=f"DocumentType {name}") as conn:
            await self._check_container(conn, spec.container, spec.name)
            row = await self._repository.insert(
                conn, spec.name, spec.category.value, spec.model_dump(mode="json"), actor
            )
        self._indexes.pop(memory, None)
        return _custom(row)

    async def update(
        self, memory: str, name: str, changes: Mapping[str, Any], actor: str
    ) -> DocumentType:
        """``changes`` replace the fields they name (None: leave it); the name stays."""
        if self.system.get(name) is not None:
            raise _read_only(name)
        async with self._db.memory_transaction(memory, subject=f"DocumentType {name}") as conn:
            row = await self._repository.get(conn, name)
            if row is None:
                raise NotFound(f"No custom document type {name!r} in this memory", name=name)
            merged = {**row.definition, **{k: v for k, v in changes.items() if v is not None}}
            if "category" in changes and changes["category"] is not None:
                # The old category's defaults must not pin the new one's: fields the change
                # does not give come again from the new category.
                for key in ("chunking", "chunk_size", "chunk_overlap", "extraction", "binary"):
                    if changes.get(key) is None:
                        merged.pop(key, None)
            merged["name"] = name
            spec = validate(merged)
            await self._check_container(conn, spec.container, name)
            updated = await self._repository.update(
                conn, name, spec.category.value, spec.model_dump(mode="json"), actor
            )
        self._indexes.pop(memory, None)
        if updated is None:  # deleted between the read and the write: the row was locked
            raise NotFound(f"No custom document type {name!r} in this memory", name=name)
        return _custom(updated)

    async def delete(self, memory: str, name: str) -> None:
        if self.system.get(name) is not None:
            raise _read_only(name)
        async with self._db.memory_transaction(memory, subject=f"DocumentType {name}") as conn:
            deleted = await self._repository.delete(conn, name)
        self._indexes.pop(memory, None)
        if not deleted:
            raise NotFound(f"No custom document type {name!r} in this memory", name=name)

    async def _check_container(self, conn: Connection, container: str | None, name: str) -> None:
        if container is None or self.system.get(container) is not None:
            return
        if container == name or await self._repository.get(conn, container) is None:
            raise BadUserInput(
                f"container: no document type {container!r} to be a kind of",
                field="container",
                reason="invalid_document_type",
            )


def _custom(row: StoredType) -> DocumentType:
    return parse_type(row.definition, system=False)
