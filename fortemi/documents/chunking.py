"""Syntactic chunking: code cut at its function and class boundaries by a real parser.

For the languages in :data:`GRAMMARS` (Python, JavaScript, TypeScript and TSX, Go, Rust,
Java, C, C++, SQL, shell) the file is parsed with tree-sitter (each grammar a prebuilt
wheel) and read as its top-level nodes: a function, a class, an import block, a statement.
Comments and attributes directly above a node (no blank line between) travel with it, and
punctuation between nodes (SQL's ``;``) with the node before. Nodes are packed greedily, as
the existing chunker packs its units: a node joins the current chunk while the chunk still
fits in ``size``, so chunks start and end at boundaries and never overlap. A node longer
than ``size`` opens into the members of its body (a class into its methods, an ``impl``
into its functions, a namespace into its declarations; its header goes with the first
member, its closing line with the last), and a node with no members is split by the
fallback chunker, the existing code chunker, with its overlap. Each chunk's ``heading`` is
the path of the definition it starts with (``Greeter > greet``).

Code without a grammar here goes to the fallback chunker read as code, and anything that is
not code to the fallback with its own format, unchanged; :attr:`Chunked.strategy_used`
says which happened (``syntactic:python``, ``code_fallback:kotlin``, ``default:markdown``).
The fallback is injected (the composition root hands in retrieval's ``chunk_text``): this
feature does not import another's chunker.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import tree_sitter
import tree_sitter_bash
import tree_sitter_c
import tree_sitter_cpp
import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_rust
import tree_sitter_sql
import tree_sitter_typescript

from fortemi.documents.models import Category, DocumentType
from fortemi.documents.registry import TypeIndex, system_index

__all__ = ["GRAMMARS", "Chunk", "Chunked", "CodeChunker", "FallbackChunker", "Span"]

# Document type → the tree-sitter grammar that parses it.
GRAMMARS: dict[str, Callable[[], object]] = {
    "python": tree_sitter_python.language,
    "python-stub": tree_sitter_python.language,
    "javascript": tree_sitter_javascript.language,
    "jsx": tree_sitter_javascript.language,
    "typescript": tree_sitter_typescript.language_typescript,
    "typescript-declaration": tree_sitter_typescript.language_typescript,
    "tsx": tree_sitter_typescript.language_tsx,
    "go": tree_sitter_go.language,
    "rust": tree_sitter_rust.language,
    "java": tree_sitter_java.language,
    "c": tree_sitter_c.language,
    "c-header": tree_sitter_c.language,
    "cpp": tree_sitter_cpp.language,
    "cpp-header": tree_sitter_cpp.language,
    "sql": tree_sitter_sql.language,
    "shell": tree_sitter_bash.language,
}
# Fields that lead from a definition to its members, tried in this order.
_BODY_FIELDS = ("body", "definition", "declaration", "value", "type")
_PRELUDE_TYPES = frozenset({"attribute_item", "inner_attribute_item", "decorator", "annotation"})
_NAME_TYPES = frozenset(
    {"identifier", "field_identifier", "type_identifier", "qualified_identifier",
     "destructor_name", "operator_name", "property_identifier", "name", "word"}
)  # fmt: skip


# Nodes whose "name" is no definition's: the heading stays with the definitions.
_UNNAMED_KINDS = ("import", "use_declaration", "include", "package", "command", "expression")


class Span(Protocol):
    """What a fallback chunk offers: an exact slice ``text[start:end]`` and a heading."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def heading(self) -> str | None: ...


class FallbackChunker(Protocol):
    """The existing chunker (retrieval's ``chunk_text``), handed in by the composition root."""

    def __call__(self, text: str, *, format: str, size: int, overlap: int) -> Sequence[Span]: ...


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice of a document: ``text == document[start:end]``, in document order."""

    ordinal: int
    text: str
    start: int
    end: int
    heading: str | None


@dataclass(frozen=True, slots=True)
class Chunked:
    chunks: list[Chunk]
    strategy_used: str  # syntactic:<type>, code_fallback:<type> or default:<format>


class _Unit(NamedTuple):
    start: int  # character offsets
    end: int
    heading: str | None
    node: tree_sitter.Node | None


@functools.cache
def _language(name: str) -> tree_sitter.Language:
    return tree_sitter.Language(GRAMMARS[name]())


class _Offsets:
    """Byte offsets (tree-sitter's) to character offsets (Python's)."""

    def __init__(self, text: str, data: bytes) -> None:
        self._table: list[int] | None = None
        if len(data) != len(text):
            table = []
            for index, char in enumerate(text):
                table.extend([index] * len(char.encode("utf-8")))
            table.append(len(text))
            self._table = table

    def __call__(self, byte: int) -> int:
        return byte if self._table is None else self._table[byte]


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _name(node: tree_sitter.Node) -> str | None:
    """The name a definition declares, where the grammar says where it is."""
    for candidate in (node, *node.named_children):
        name = candidate.child_by_field_name("name")
        if name is not None:
            return _text(name)
        inner = candidate.child_by_field_name("definition") or candidate.child_by_field_name(
            "declaration"
        )
        if inner is not None and (found := inner.child_by_field_name("name")) is not None:
            return _text(found)
        declarator = candidate.child_by_field_name("declarator")
        while declarator is not None:  # C and C++: int *(*name)(void) and friends
            if declarator.type in _NAME_TYPES:
                return _text(declarator)
            declarator = declarator.child_by_field_name("declarator")
        if candidate is node and (implemented := node.child_by_field_name("type")) is not None:
            return _text(implemented)  # Rust's impl Type
    return None


def _heading_of(node: tree_sitter.Node) -> str | None:
    """A definition's name; none for imports, includes and plain statements."""
    kind = node.type
    if any(word in kind for word in _UNNAMED_KINDS):
        return None
    return _name(node)


def _is_prelude(node: tree_sitter.Node) -> bool:
    return "comment" in node.type or node.type in _PRELUDE_TYPES


def _units(children: Sequence[tree_sitter.Node], at: _Offsets, parent: str | None) -> list[_Unit]:
    """The nodes as units: preludes joined to what they stand above (when no blank line
    parts them), punctuation to what it follows."""
    units: list[_Unit] = []
    pending: tuple[int, int, int] | None = None  # a prelude's start, end and last row
    for child in children:
        start, end = at(child.start_byte), at(child.end_byte)
        if not child.is_named:
            if pending is None and units:
                units[-1] = units[-1]._replace(end=max(units[-1].end, end))
            continue
        if pending is not None and child.start_point.row - pending[2] > 1:
            units.append(_Unit(pending[0], pending[1], parent, None))
            pending = None
        if _is_prelude(child):
            first = start if pending is None else pending[0]
            pending = (first, end, child.end_point.row)
            continue
        name = _heading_of(child)
        heading = name if parent is None else (f"{parent} > {name}" if name else parent)
        units.append(_Unit(start if pending is None else pending[0], end, heading, child))
        pending = None
    if pending is not None:
        units.append(_Unit(pending[0], pending[1], parent, None))
    return units


def _members(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """What an oversized definition opens into: the children of its body."""
    current = node
    for _ in range(4):
        body = next(
            (b for f in _BODY_FIELDS if (b := current.child_by_field_name(f)) is not None), None
        )
        if body is None:
            named = [c for c in current.named_children if c.named_child_count >= 2]
            body = max(named, key=lambda c: c.end_byte - c.start_byte, default=None)
            if (
                body is None
                or body.end_byte - body.start_byte < (node.end_byte - node.start_byte) // 2
            ):
                return []
        if sum(1 for c in body.named_children if not _is_prelude(c)) >= 2:
            return list(body.children)
        current = body
    return []


class CodeChunker:
    """Chunks a document by its type: syntactically where a grammar exists, else through
    ``fallback`` (see the module docstring). Callable as retrieval's chunker seam."""

    def __init__(self, fallback: FallbackChunker, index: TypeIndex | None = None) -> None:
        self._fallback = fallback
        self._index = index or system_index()

    def __call__(self, text: str, *, format: str, size: int, overlap: int) -> list[Chunk]:
        return self.chunk(text, format=format, size=size, overlap=overlap).chunks

    def chunk(
        self,
        text: str,
        *,
        format: str | None = None,
        type: DocumentType | None = None,
        size: int,
        overlap: int,
    ) -> Chunked:
        """``text`` read as ``type`` (or the type ``format`` names) in chunks of at most
        ``size`` characters; pieces of a split node overlap by up to ``overlap``."""
        kind = type or (self._index.for_format(format) if format else None)
        if kind is None or kind.category is not Category.CODE:
            given = format or (kind.name if kind else "text")
            return Chunked(
                self._spans(text, 0, len(text), given, size, overlap, None), f"default:{given}"
            )
        if kind.name not in GRAMMARS or not text.strip():
            chunks = self._spans(text, 0, len(text), "code", size, overlap, None)
            return Chunked(chunks, f"code_fallback:{kind.name}")
        data = text.encode("utf-8")
        tree = tree_sitter.Parser(_language(kind.name)).parse(data)
        at = _Offsets(text, data)
        spans = list(self._pack(text, _units(tree.root_node.children, at, None), at, size, overlap))
        chunks = [Chunk(i, text[a:b], a, b, heading) for i, (a, b, heading) in enumerate(spans)]
        return Chunked(chunks, f"syntactic:{kind.name}")

    def _spans(
        self, text: str, start: int, end: int, format: str, size: int, overlap: int,
        heading: str | None,
    ) -> list[Chunk]:  # fmt: skip
        pieces = self._fallback(text[start:end], format=format, size=size, overlap=overlap)
        return [
            Chunk(i, text[start + p.start : start + p.end], start + p.start, start + p.end,
                  p.heading if heading is None else heading)
            for i, p in enumerate(pieces)
        ]  # fmt: skip

    def _pack(
        self, text: str, units: list[_Unit], at: _Offsets, size: int, overlap: int
    ) -> Iterator[tuple[int, int, str | None]]:
        pending = list(reversed(units))
        current: tuple[int, int, str | None] | None = None
        while pending:
            unit = pending.pop()
            if unit.end - unit.start <= size:
                if current is not None and unit.end - current[0] <= size:
                    current = (current[0], unit.end, current[2] or unit.heading)
                else:
                    if current is not None:
                        yield current
                    current = (unit.start, unit.end, unit.heading)
                continue
            members = _members(unit.node) if unit.node is not None else []
            parts = _units(members, at, unit.heading) if members else []
            if parts:
                # The definition's header goes with its first member, its closing with
                # the last, so that nothing of the unit is left out.
                parts[0] = parts[0]._replace(start=unit.start)
                parts[-1] = parts[-1]._replace(end=unit.end)
                pending.extend(reversed(parts))
                continue
            if current is not None:
                yield current
                current = None
            for piece in self._spans(
                text, unit.start, unit.end, "code", size, overlap, unit.heading
            ):
                yield piece.start, piece.end, piece.heading
        if current is not None:
            yield current
