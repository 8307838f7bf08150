"""Structured data: JSON (and JSON Lines), YAML, TOML, XML, CSV and TSV.

Each file is parsed to say whether it is valid and what it holds (top-level keys or
headers, records, rows and columns), then its text is the searchable text: the source for
JSON, YAML, TOML and delimited rows, the character data for XML (tag names are markup,
not content). An invalid file is still ``DONE``: its text is searchable, and
``metadata["valid"]`` is false with the parser's ``error``.

The format is the detected type's, or that of a type it is a kind of (``package.json`` is
``json``), else what its MIME type's suffix says (``+xml``, ``+json``). A data type with no
parser here (INI, properties, dotenv) is read as text; a binary one (Avro, Parquet) is
``SKIPPED``: no reader ships with Fortemi.
"""

from __future__ import annotations

import csv
import io
import tomllib
from typing import Any

import defusedxml.ElementTree as SafeET
import orjson
import yaml
from defusedxml import DefusedXmlException

from fortemi.documents.extraction._run import Read, Run, Unavailable, counts
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.text import read_text
from fortemi.documents.models import Detection, DocumentType
from fortemi.documents.registry import TypeIndex, system_index

__all__ = ["StructuredAdapter", "format_of"]

FORMATS = ("json", "json-lines", "yaml", "toml", "xml", "csv", "tsv")
MAX_KEYS = 100  # top-level keys or headers kept in metadata
_ROWS_PER_CHECK = 5000
_ELEMENTS_PER_CHECK = 10_000
_SUFFIXES = {"+json": "json", "+xml": "xml", "/xml": "xml", "+yaml": "yaml", "+toml": "toml"}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it


def format_of(t: DocumentType, index: TypeIndex) -> str | None:
    """The parser for type ``t``: its own name, a container's, or its MIME suffix's."""
    seen: set[str] = set()
    current: DocumentType | None = t
    while current is not None and current.name not in seen:
        if current.name in FORMATS:
            return current.name
        seen.add(current.name)
        current = index.get(current.container) if current.container else None
    for mime in t.mime_types:
        for suffix, name in _SUFFIXES.items():
            if mime.endswith(suffix):
                return name
    return None


class StructuredAdapter:
    name = "structured"

    def __init__(self, index: TypeIndex | None = None) -> None:
        self._index = index or system_index()

    def health(self) -> Health:
        return Health(self.name, True, "built in (orjson, PyYAML, tomllib, defusedxml, csv)")

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        kind = format_of(detection.type, self._index)
        if kind is None and detection.type.binary:
            raise Unavailable(
                "unsupported_format",
                f"no reader for {detection.type.display_name} files ships with Fortemi",
            )
        text, truncated, metadata = read_text(data, detection, run)
        metadata = {**metadata, "format": kind or "text", **counts(text)}
        if kind is None:
            return Read(text, metadata, truncated=truncated)
        # A truncated source cannot be parsed whole: validity is reported only for files
        # that fit the text limit.
        if truncated:
            metadata["valid"] = None
            return Read(text, metadata, truncated=True)
        try:
            found, body = _PARSERS[kind](text, run)
        except _Invalid as exc:
            metadata.update(valid=False, error=str(exc))
            return Read(text, metadata)
        metadata.update(valid=True, **found)
        return Read(text if body is None else body, metadata)


class _Invalid(Exception):
    pass


def _keys(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"top_level": "object", "keys": [str(k) for k in list(value)[:MAX_KEYS]],
                "items": len(value)}  # fmt: skip
    if isinstance(value, list):
        return {"top_level": "array", "items": len(value)}
    return {"top_level": type(value).__name__}


def _json(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    try:
        # orjson bounds nesting (1024 levels) where the standard module recurses until
        # RecursionError on a hostile "[[[[...".
        return _keys(orjson.loads(text)), None
    except orjson.JSONDecodeError as exc:
        raise _Invalid(f"json: {exc}") from exc


def _json_lines(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    records = invalid = 0
    keys: dict[str, None] = {}
    for number, line in enumerate(text.splitlines()):
        if number % _ROWS_PER_CHECK == 0:
            run.check(f"line {number + 1}")
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            invalid += 1
            continue
        records += 1
        if isinstance(value, dict) and len(keys) < MAX_KEYS:
            keys.update(dict.fromkeys(map(str, value)))
    if invalid and not records:
        raise _Invalid("json-lines: no line is a JSON value")
    return {"records": records, "invalid_records": invalid, "keys": list(keys)[:MAX_KEYS]}, None


def _yaml(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    try:
        # Aliases stay shared references (a "billion laughs" document is not expanded);
        # only the top level is looked at.
        documents = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise _Invalid(f"yaml: {exc}".replace("\n", " ")) from exc
    first = next((d for d in documents if d is not None), None)
    return {"documents": len(documents), **_keys(first)}, None


def _toml(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    try:
        return _keys(tomllib.loads(text)), None
    except tomllib.TOMLDecodeError as exc:
        raise _Invalid(f"toml: {exc}") from exc


def _xml(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    try:
        # defusedxml refuses entity declarations (billion laughs, quadratic blowup) and
        # external entities and DTDs (XXE): nothing is expanded or fetched.
        root = SafeET.fromstring(text.encode("utf-8"))
    except DefusedXmlException as exc:
        raise _Invalid(f"xml: refused: {type(exc).__name__}") from exc
    except SafeET.ParseError as exc:
        raise _Invalid(f"xml: {exc}") from exc
    parts: list[str] = []
    elements = 0
    for element in root.iter():
        elements += 1
        if elements % _ELEMENTS_PER_CHECK == 0:
            run.check(f"element {elements}")
        for piece in (element.text, element.tail):
            if piece and piece.strip():
                parts.append(piece.strip())
    children = dict.fromkeys(_local(child.tag) for child in root)
    found = {"root": _local(root.tag), "keys": list(children)[:MAX_KEYS], "elements": elements}
    return found, "\n".join(parts)


def _local(tag: object) -> str:
    name = str(tag)
    return name.rsplit("}", 1)[-1]


def _delimited(text: str, run: Run, delimiter: str) -> tuple[dict[str, Any], str | None]:
    rows = columns = 0
    headers: list[str] = []
    try:
        for number, row in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter)):
            if number % _ROWS_PER_CHECK == 0:
                run.check(f"row {number + 1}")
            if not row:
                continue
            if not headers and rows == 0:
                headers = [cell.strip() for cell in row[:MAX_KEYS]]
            rows += 1
            columns = max(columns, len(row))
    except csv.Error as exc:
        raise _Invalid(f"csv: {exc}") from exc
    # The first row is taken for the headers; "rows" counts the rows after it.
    return {"headers": headers, "rows": max(rows - 1, 0), "columns": columns,
            "delimiter": delimiter}, None  # fmt: skip


def _csv(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    # The sniffer's regular expressions are slow on long hostile lines: it sees at most
    # the first 20 lines and 4 kB.
    sample = "\n".join(text[:4096].splitlines()[:20])
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;|\t")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = ","
    return _delimited(text, run, delimiter)


def _tsv(text: str, run: Run) -> tuple[dict[str, Any], str | None]:
    return _delimited(text, run, "\t")


_PARSERS = {
    "json": _json,
    "json-lines": _json_lines,
    "yaml": _yaml,
    "toml": _toml,
    "xml": _xml,
    "csv": _csv,
    "tsv": _tsv,
}
