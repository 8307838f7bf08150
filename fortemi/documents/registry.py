"""Document types as data: the definition schema, the system file, and the lookups.

A type is defined by a mapping (:class:`TypeSpec`): the system's in ``types.yaml`` beside
this module, loaded and validated once (:func:`system_types`), a memory's custom ones from
its ``document_type`` table, both through the same schema, so a custom type cannot be
anything a system one could not. Whatever a category leaves unsaid (chunking, chunk size
and overlap, boundaries, extraction, binary) comes from the file's ``defaults`` for it.

:class:`TypeIndex` answers the cascade's questions (which type a filename pattern, a MIME
type, an extension, a signature, an interpreter or a format name means) over custom types
first, then system ones: at every step a memory's own type wins over a system type of the
same rank (same extension, same MIME type, equally specific pattern or signature).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fortemi.documents.models import (
    Category,
    ChunkingStrategy,
    DocumentType,
    Extraction,
    Magic,
)
from fortemi.platform.errors import BadUserInput

__all__ = [
    "BINARY",
    "PLAINTEXT",
    "TypeIndex",
    "TypeSpec",
    "category_defaults",
    "parse_type",
    "system_index",
    "system_types",
    "validate",
]

TYPES_FILE = Path(__file__).with_name("types.yaml")
PLAINTEXT, BINARY = "plaintext", "binary"  # the cascade's last answers: text, and not text

_NAME = r"^[a-z0-9][a-z0-9_.+-]{0,63}$"
_EXTENSION = re.compile(r"^\.[a-z0-9_+-][a-z0-9_.+-]{0,30}$")
_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")
_WORD = re.compile(r"^[A-Za-z0-9_.+#-]{1,64}$")
_PATTERN = re.compile(r"^[^/\\\x00-\x1f]{1,128}$")  # a basename or a glob: no directories


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MagicSpec(_Spec):
    """A signature as written in YAML or given through the API: ``hex`` or ``text``."""

    hex: str | None = Field(default=None, max_length=512)
    text: str | None = Field(default=None, min_length=1, max_length=256)
    at: int = Field(default=0, ge=0, le=65536)
    ignore_case: bool = False
    leading_space: bool = False
    also: list[tuple[Annotated[int, Field(ge=0, le=65536)], str]] = Field(default=[], max_length=4)
    contains: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default=[], max_length=4
    )

    @model_validator(mode="after")
    def _one_pattern(self) -> MagicSpec:
        if (self.hex is None) == (self.text is None):
            raise ValueError("give exactly one of hex and text")
        if self.hex is not None:
            try:
                if not bytes.fromhex(self.hex):
                    raise ValueError("hex must not be empty")
            except ValueError as exc:
                raise ValueError(f"hex is not an even number of hex digits: {exc}") from None
        texts = [self.text or "", *self.contains, *(value for _, value in self.also)]
        if any(ch > "\xff" for text in texts for ch in text):
            raise ValueError("text signatures name bytes: characters U+0000 to U+00FF only")
        return self

    def to_magic(self) -> Magic:
        data = bytes.fromhex(self.hex) if self.hex is not None else _latin1(self.text or "")
        also = tuple((at, _latin1(value)) for at, value in self.also)
        contains = tuple(_latin1(value) for value in self.contains)
        if self.ignore_case:
            data, contains = data.lower(), tuple(c.lower() for c in contains)
        return Magic(data, self.at, self.ignore_case, self.leading_space, also, contains)


def _latin1(text: str) -> bytes:
    # Text signatures name bytes: each character is one byte (\0 is a NUL byte), as in the
    # formats' specifications; a character past U+00FF is refused by the validator.
    return text.encode("latin-1")


def _checked(pattern: re.Pattern[str], what: str, *, lower: bool) -> AfterValidator:
    def check(value: str) -> str:
        value = value.strip().lower() if lower else value
        if not pattern.match(value):
            raise ValueError(f"{value!r} is not a valid {what}")
        return value

    return AfterValidator(check)


_Extension = Annotated[
    str, _checked(_EXTENSION, "extension (a dot, then letters or digits)", lower=True)
]
_Mime = Annotated[str, _checked(_MIME, "MIME type (type/subtype)", lower=True)]
_Pattern = Annotated[str, _checked(_PATTERN, "file name or glob (no / allowed)", lower=False)]
_Word = Annotated[str, _checked(_WORD, "single word", lower=False)]


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


class TypeSpec(_Spec):
    """One document type's definition, every field validated; names as in ``types.yaml``."""

    name: str = Field(pattern=_NAME)
    display_name: str = Field(min_length=1, max_length=100)
    category: Category
    description: str | None = Field(default=None, max_length=500)
    extensions: list[_Extension] = Field(default=[], max_length=32)
    mime_types: list[_Mime] = Field(default=[], max_length=16)
    filename_patterns: list[_Pattern] = Field(default=[], max_length=32)
    magic: list[MagicSpec] = Field(default=[], max_length=16)
    interpreters: list[_Word] = Field(default=[], max_length=16)
    aliases: list[_Word] = Field(default=[], max_length=16)
    chunking: ChunkingStrategy
    chunk_size: int = Field(ge=100, le=20000)
    chunk_overlap: int = Field(ge=0, le=5000)
    preserve_boundaries: bool
    extraction: Extraction
    binary: bool
    container: str | None = Field(default=None, pattern=_NAME)

    @field_validator("extensions", "mime_types", "filename_patterns", "interpreters", "aliases")
    @classmethod
    def _no_repeats(cls, values: list[str]) -> list[str]:
        return _unique(values)

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_under_half(cls, value: int, info: ValidationInfo) -> int:
        size = info.data.get("chunk_size")
        if isinstance(size, int) and value * 2 >= size:
            raise ValueError(f"must be less than half of chunkSize ({size})")
        return value

    def to_type(self, *, system: bool) -> DocumentType:
        return DocumentType(
            name=self.name,
            display_name=self.display_name,
            category=self.category,
            extensions=tuple(self.extensions),
            mime_types=tuple(self.mime_types),
            magic=tuple(m.to_magic() for m in self.magic),
            filename_patterns=tuple(self.filename_patterns),
            interpreters=tuple(self.interpreters),
            aliases=tuple(self.aliases),
            chunking=self.chunking,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            preserve_boundaries=self.preserve_boundaries,
            extraction=self.extraction,
            binary=self.binary,
            container=self.container,
            system=system,
            description=self.description,
        )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def parse_type(definition: Mapping[str, Any], *, system: bool = False) -> DocumentType:
    """A type from its definition, the category's defaults filling what it leaves out.

    Raises BadUserInput naming the first invalid field (as the API spells it, camelCase,
    with its index: ``mimeTypes[1]``) and why.
    """
    return validate(definition).to_type(system=system)


def validate(definition: Mapping[str, Any]) -> TypeSpec:
    """The definition checked and completed (see :func:`parse_type`)."""
    data = dict(definition)
    defaults = category_defaults().get(str(data.get("category")), {})
    for key, value in defaults.items():
        if data.get(key) is None:
            data[key] = value
    try:
        return TypeSpec.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        location = [str(part) for part in error["loc"]]
        field = _camel(location[0]) if location else "input"
        path = field + "".join(f"[{p}]" if p.isdigit() else f".{_camel(p)}" for p in location[1:])
        message = str(error["msg"]).removeprefix("Value error, ")
        raise BadUserInput(
            f"Invalid document type: {path}: {message}", field=path, reason="invalid_document_type"
        ) from None


@functools.cache
def _system_file() -> Mapping[str, Any]:
    loaded = yaml.safe_load(TYPES_FILE.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict) or loaded.get("version") != 1:
        raise RuntimeError(f"{TYPES_FILE}: expected version 1 with defaults and types")
    return loaded


def category_defaults() -> Mapping[str, Mapping[str, Any]]:
    defaults: Mapping[str, Mapping[str, Any]] = _system_file()["defaults"]
    return defaults


@functools.cache
def system_types() -> tuple[DocumentType, ...]:
    """The shipped types, in file order; a broken file fails loudly, at first use."""
    types: list[DocumentType] = []
    for entry in _system_file()["types"]:
        try:
            types.append(parse_type(entry, system=True))
        except BadUserInput as exc:
            raise RuntimeError(f"{TYPES_FILE}: {entry.get('name')!r}: {exc.message}") from None
    names = [t.name for t in types]
    if len(set(names)) != len(names):
        raise RuntimeError(f"{TYPES_FILE}: a type name is used twice")
    known = set(names)
    for t in types:
        if t.container is not None and t.container not in known:
            raise RuntimeError(f"{TYPES_FILE}: {t.name}: no container type {t.container!r}")
    return tuple(types)


@functools.cache
def system_index() -> TypeIndex:
    return TypeIndex((), system_types())


def _specificity(pattern: str) -> int:
    return sum(ch not in "*?[]" for ch in pattern)


class TypeIndex:
    """The lookups of the detection cascade over ``custom`` types, then ``system`` ones."""

    def __init__(self, custom: Iterable[DocumentType], system: Iterable[DocumentType]) -> None:
        self.types: tuple[DocumentType, ...] = (*custom, *system)
        self.by_name: dict[str, DocumentType] = {}
        self._aliases: dict[str, DocumentType] = {}
        self._filenames: dict[str, DocumentType] = {}
        self._globs: list[tuple[str, DocumentType]] = []
        self._mimes: dict[str, DocumentType] = {}
        self._extensions: dict[str, DocumentType] = {}
        self._interpreters: dict[str, DocumentType] = {}
        self.magic: list[tuple[Magic, DocumentType]] = []
        for t in self.types:  # setdefault: the first (custom before system) keeps a key
            self.by_name.setdefault(t.name, t)
            for alias in (t.name, *t.aliases):
                self._aliases.setdefault(alias.lower(), t)
            for pattern in t.filename_patterns:
                if any(ch in pattern for ch in "*?["):
                    self._globs.append((pattern.lower(), t))
                else:
                    self._filenames.setdefault(pattern.lower(), t)
            for mime in t.mime_types:
                self._mimes.setdefault(mime, t)
            for extension in t.extensions:
                self._extensions.setdefault(extension, t)
            for interpreter in t.interpreters:
                self._interpreters.setdefault(interpreter.lower(), t)
            self.magic.extend((m, t) for m in t.magic)
        # The most specific glob first; a stable sort keeps custom before system on ties.
        self._globs.sort(key=lambda item: -_specificity(item[0]))

    def get(self, name: str) -> DocumentType | None:
        return self.by_name.get(name)

    def for_format(self, format: str) -> DocumentType | None:
        """The type a note's format names (``python``, ``py``, ``markdown``, ``md``)."""
        return self._aliases.get(format.strip().lower())

    def for_filename(self, basename: str) -> DocumentType | None:
        name = basename.lower()
        found = self._filenames.get(name)
        if found is not None:
            return found
        for pattern, t in self._globs:
            if fnmatch.fnmatchcase(name, pattern):
                return t
        return None

    def for_mime(self, mime: str) -> DocumentType | None:
        return self._mimes.get(mime)

    def for_extension(self, basename: str) -> DocumentType | None:
        """By the longest extension first: ``a.tar.gz`` is ``.tar.gz`` before ``.gz``."""
        name = basename.lower()
        start = name.find(".", 1)  # a leading dot names a hidden file, not an extension
        while start != -1:
            found = self._extensions.get(name[start:])
            if found is not None:
                return found
            start = name.find(".", start + 1)
        return None

    def for_interpreter(self, program: str) -> DocumentType | None:
        """``python3.11`` is ``python3.11``, else ``python``: versions are dropped."""
        name = program.lower()
        return self._interpreters.get(name) or self._interpreters.get(name.rstrip("0123456789."))

    def kind_of(self, t: DocumentType, other: DocumentType) -> bool:
        """Whether ``t`` is ``other`` or, through its containers, a kind of it."""
        seen: set[str] = set()
        current: DocumentType | None = t
        while current is not None and current.name not in seen:
            if current.name == other.name:
                return True
            seen.add(current.name)
            current = self.by_name.get(current.container) if current.container else None
        return False
