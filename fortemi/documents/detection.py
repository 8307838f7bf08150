"""The detection cascade: what a file is, from its name, its declared type and its bytes.

Each step answers or hands on to the next (early exit), and the answer records the step
(:class:`~fortemi.documents.models.Method`) and its confidence:

1. **filename pattern** (``Dockerfile``, ``package.json``, ``*.d.ts``, ``.env.*``): 1.0;
2. **format** (a note's declared format, ``python`` or ``md``): 0.95, the author's word,
   like a MIME type;
3. **declared MIME type**: 0.95. ``application/octet-stream`` (and its kin) says nothing and
   is skipped; ``text/plain`` is what clients declare for any text, so it yields to a
   known extension and answers ``plaintext`` at 0.95 only after the extension step;
4. **extension** (longest first: ``.tar.gz`` before ``.gz``): 0.9;
5. **content sniffing**, 0.7: byte signatures (the most specific match wins: a ZIP whose
   first members are ``word/...`` is a Word document), ``#!`` interpreters, then structure
   (JSON, JSON Lines, YAML, XML, HTML, CSV/TSV, markdown);
6. **fallback**, 0.1: ``plaintext`` for text, ``binary`` (application/octet-stream) for
   content that is not text: bytes that match nothing are never called plain text.

Only the first :data:`PREFIX_BYTES` of the content are read. A name or declaration that a
*strong* signature contradicts (one of a binary format, at least four bytes or on content
that is not text; ``docx`` declared over ``zip`` bytes is consistent, ``image/png``
declared over PDF bytes is not) answers the content's type at 0.7 with method
``mime_mismatch`` or ``name_mismatch`` and the claim in ``Detection.claimed``, so that
attachments can refuse or contain such files.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import posixpath
import re

import yaml

from fortemi.documents.models import Detection, DocumentType, Magic, Method
from fortemi.documents.registry import BINARY, PLAINTEXT, TypeIndex

__all__ = ["PREFIX_BYTES", "detect", "looks_binary"]

PREFIX_BYTES = 8192
CONFIDENCE = {
    Method.FILENAME: 1.0,
    Method.FORMAT: 0.95,
    Method.MIME: 0.95,
    Method.EXTENSION: 0.9,
    Method.MAGIC: 0.7,
    Method.SHEBANG: 0.7,
    Method.STRUCTURE: 0.7,
    Method.MIME_MISMATCH: 0.7,
    Method.NAME_MISMATCH: 0.7,
    Method.FALLBACK: 0.1,
}
# Declared types that say nothing about the content.
_GENERIC_MIME = frozenset(
    {"application/octet-stream", "binary/octet-stream", "application/unknown",
     "application/x-unknown", "application/binary", "application/download",
     "application/force-download", "unknown/unknown"}
)  # fmt: skip
_STRONG_BYTES = 4
_SPACE = b" \t\r\n\f\v"
_BOM = b"\xef\xbb\xbf"
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")
_YAML_KEY = re.compile(r"^[A-Za-z_][\w .-]*:(?:\s|$)")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n---[ \t]*\r?\n", re.DOTALL)
_MARKDOWN_SIGNS = (
    re.compile(r"^#{1,6} \S", re.M),  # ATX headings
    re.compile(r"^(?:```|~~~)", re.M),  # fences
    re.compile(r"\[[^\]\n]+\]\([^)\s]+\)|\[\[[^\]\n]+\]\]"),  # links and wiki links
    re.compile(r"^[ \t]*(?:[-*+]|\d+\.) \S", re.M),  # list items
    re.compile(r"^\S.*\r?\n(?:=+|-+)[ \t]*$", re.M),  # setext headings
    re.compile(r"\*\*[^*\n]+\*\*|`[^`\n]+`"),  # strong emphasis, code spans
)
_XML_TAG = re.compile(r"<([A-Za-z_][\w:.-]*)[\s>/]")
_HTML_TAGS = frozenset(
    "html head body div span p a table ul ol li h1 h2 h3 meta title script style link "
    "section article nav header footer form img br".split()
)


def looks_binary(prefix: bytes) -> bool:
    """Whether ``prefix`` is not text: a NUL byte (outside UTF-16 with its BOM), or bytes
    that are not UTF-8 with more than a tenth of them control characters."""
    if not prefix:
        return False
    if prefix.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    if b"\x00" in prefix:
        return True
    try:
        # A prefix may end inside a character: an incremental decoder keeps it pending.
        codecs.getincrementaldecoder("utf-8")().decode(prefix, final=False)
        return False
    except UnicodeDecodeError:
        controls = sum(1 for b in prefix if (b < 0x20 and b not in _TEXT_CONTROLS) or b == 0x7F)
        return controls * 10 > len(prefix)


def _text_of(prefix: bytes) -> str:
    if prefix.startswith((b"\xff\xfe", b"\xfe\xff")):
        return prefix.decode("utf-16", errors="replace")
    return prefix.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _matches(magic: Magic, prefix: bytes) -> bool:
    base = 0
    if magic.leading_space:
        base = len(_BOM) if prefix.startswith(_BOM) else 0
        while base < len(prefix) and prefix[base] in _SPACE:
            base += 1
    start = base + magic.at
    window = prefix[start : start + len(magic.data)]
    if magic.ignore_case:
        window = window.lower()
    if window != magic.data:
        return False
    if any(prefix[at : at + len(data)] != data for at, data in magic.also):
        return False
    haystack = prefix.lower() if magic.ignore_case else prefix
    return all(needle in haystack for needle in magic.contains)


def _by_signature(index: TypeIndex, prefix: bytes, binary: bool) -> DocumentType | None:
    """The type of the most specific signature that matches (the first on ties: custom
    types come first). A short signature of a binary format counts only on binary bytes."""
    best: tuple[int, DocumentType] | None = None
    for magic, t in index.magic:
        if t.binary and magic.specificity < _STRONG_BYTES and not binary:
            continue
        if (best is None or magic.specificity > best[0]) and _matches(magic, prefix):
            best = (magic.specificity, t)
    return None if best is None else best[1]


def _by_shebang(index: TypeIndex, text: str) -> DocumentType | None:
    if not text.startswith("#!"):
        return None
    words = text[2 : text.find("\n") if "\n" in text else None].split()
    if not words:
        return None
    program, rest = posixpath.basename(words[0]), words[1:]
    if program == "env":  # #!/usr/bin/env [-S] [NAME=value] python3 -u
        rest = [w for w in rest if not w.startswith("-") and "=" not in w]
        if not rest:
            return None
        program = posixpath.basename(rest[0])
    return index.for_interpreter(program)


def _complete_lines(text: str, truncated: bool) -> list[str]:
    lines = text.splitlines()
    return lines[:-1] if truncated and len(lines) > 1 else lines


def _by_structure(index: TypeIndex, text: str, truncated: bool) -> DocumentType | None:
    stripped = text.lstrip()
    if not stripped:
        return None
    first = stripped[0]
    lines = [line for line in _complete_lines(stripped, truncated) if line.strip()]
    if first in "{[":
        if len(lines) >= 2 and all(_is_json_object(line) for line in lines):
            return index.get("json-lines")
        try:
            json.loads(stripped)
            return index.get("json")
        except ValueError:
            if truncated and re.match(r"[{\[]\s*(?:\"|[{\[\]}]|-?\d|true|false|null)", stripped):
                return index.get("json")
    if first == "<":
        tag = _XML_TAG.match(stripped)
        if tag is not None:
            if tag[1].lower() in _HTML_TAGS:
                return index.get("html")
            if "</" in stripped or "/>" in stripped:
                return index.get("xml")
    front = _FRONT_MATTER.match(stripped)
    if front is not None:
        rest = stripped[front.end() :]
        return index.get("yaml") if _is_yaml_mapping(rest, truncated) else index.get("markdown")
    keys = sum(1 for line in lines[:20] if _YAML_KEY.match(line))
    if (stripped.startswith("---") or keys >= 2) and _is_yaml_mapping(stripped, truncated):
        return index.get("yaml")
    separated = _separated(lines)
    if separated is not None:
        return index.get(separated)
    if sum(1 for sign in _MARKDOWN_SIGNS if sign.search(stripped)) >= 2 and not _code_like(lines):
        return index.get("markdown")
    return None


def _code_like(lines: list[str]) -> bool:
    """Whether a fifth of the lines end as statements and blocks do (``;``, ``{``, ``}``,
    ``:``, ``)``): ``# comments`` and backticks in code are no markdown."""
    ends = sum(1 for line in lines if line.rstrip().endswith((";", "{", "}", ":", ")")))
    return ends * 5 >= len(lines) > 0


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict | list)
    except ValueError:
        return False


def _is_yaml_mapping(text: str, truncated: bool) -> bool:
    body = "\n".join(_complete_lines(text, truncated))
    try:
        documents = [d for d in yaml.safe_load_all(body) if d is not None]
    except yaml.YAMLError:
        return False
    return bool(documents) and all(isinstance(d, dict) and len(d) >= 1 for d in documents)


def _separated(lines: list[str]) -> str | None:
    """``csv`` or ``tsv`` when at least three lines have the same number (> 0) of fields."""
    sample = lines[:20]
    if len(sample) < 3:
        return None
    for name, delimiter in (("tsv", "\t"), ("csv", ",")):
        rows = list(csv.reader(io.StringIO("\n".join(sample)), delimiter=delimiter))
        widths = {len(row) for row in rows}
        if len(widths) == 1 and widths.pop() > 1:
            return name
    return None


def _sniff(index: TypeIndex, prefix: bytes, binary: bool, truncated: bool) -> Detection | None:
    found = _by_signature(index, prefix, binary)
    if found is not None:
        return Detection(found, CONFIDENCE[Method.MAGIC], Method.MAGIC)
    if binary:
        return None
    text = _text_of(prefix)
    found = _by_shebang(index, text)
    if found is not None:
        return Detection(found, CONFIDENCE[Method.SHEBANG], Method.SHEBANG)
    found = _by_structure(index, text, truncated)
    if found is not None:
        return Detection(found, CONFIDENCE[Method.STRUCTURE], Method.STRUCTURE)
    return None


def _strong(index: TypeIndex, prefix: bytes, binary: bool) -> DocumentType | None:
    found = _by_signature(index, prefix, binary)
    if found is None or not found.binary:
        return None
    best = max(m.specificity for m, t in index.magic if t is found and _matches(m, prefix))
    return found if best >= _STRONG_BYTES or binary else None


def detect(
    index: TypeIndex,
    filename: str | None,
    declared_mime: str | None,
    content_prefix: bytes,
    *,
    format: str | None = None,
) -> Detection:
    """The cascade of the module docstring over ``index``'s types (a memory's first)."""
    prefix = content_prefix[:PREFIX_BYTES]
    truncated = len(content_prefix) > PREFIX_BYTES or len(prefix) == PREFIX_BYTES
    binary = looks_binary(prefix)
    strong = _strong(index, prefix, binary) if prefix else None
    basename = posixpath.basename((filename or "").replace("\\", "/")).strip()
    mime = (declared_mime or "").split(";", 1)[0].strip().lower()

    def checked(t: DocumentType, method: Method, mismatch: Method) -> Detection:
        if strong is None or index.kind_of(t, strong) or index.kind_of(strong, t):
            return Detection(t, CONFIDENCE[method], method)
        if t.name == BINARY:  # "some bytes" is no claim: the signature says which
            return Detection(strong, CONFIDENCE[Method.MAGIC], Method.MAGIC)
        return Detection(strong, CONFIDENCE[mismatch], mismatch, claimed=t.name)

    if basename and (found := index.for_filename(basename)) is not None:
        return checked(found, Method.FILENAME, Method.NAME_MISMATCH)
    if format and (found := index.for_format(format)) is not None:
        return checked(found, Method.FORMAT, Method.MIME_MISMATCH)
    if mime and mime not in _GENERIC_MIME and mime != "text/plain":
        if (found := index.for_mime(mime)) is not None:
            return checked(found, Method.MIME, Method.MIME_MISMATCH)
    if basename and (found := index.for_extension(basename)) is not None:
        return checked(found, Method.EXTENSION, Method.NAME_MISMATCH)
    if mime == "text/plain" and (found := index.get(PLAINTEXT)) is not None:
        return checked(found, Method.MIME, Method.MIME_MISMATCH)
    sniffed = _sniff(index, prefix, binary, truncated) if prefix else None
    if sniffed is not None:
        return sniffed
    fallback = index.get(BINARY if binary else PLAINTEXT)
    if fallback is None:  # the system file ships both; only a broken install lacks them
        raise RuntimeError("the document type registry has no plaintext or binary type")
    return Detection(fallback, CONFIDENCE[Method.FALLBACK], Method.FALLBACK)
