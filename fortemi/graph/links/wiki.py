"""Reading ``[[wiki links]]`` out of a note's text.

The syntax is Obsidian's: ``[[Target]]``, ``[[Target|label]]``, ``[[Target#Heading]]``,
``[[Target#Heading|label]]``, ``[[Target#^block]]`` (a block id, kept apart from
headings), ``[[folder/note.md]]`` (or without ``.md``), and the same behind ``!`` for an
embed (``![[Target]]``). Inside a table cell the pipe is written
``\\|``. ``[[#Heading]]`` points into the note itself and names no other note.

What is code is decided by CommonMark's own tokenizer (markdown-it-py, shared with every
feature that reads markdown: :mod:`fortemi.platform.markdown`), not by patterns:
a wiki link is an inline rule of that parser, so fenced and indented code blocks (never
inline-parsed) and code spans (consumed by the backtick rule before any ``[``) cannot hold
one, exactly as a markdown renderer would show them. A hand-written scanner would have to
re-implement fence lengths, list indentation and backtick-run matching to agree with it.

Also not read: the YAML front matter (it carries the aliases, see :func:`front_matter`),
raw HTML blocks (a renderer does not read markdown inside them either), and notes whose
format is neither markdown nor plain text: in JSON or source code ``[[1, 2]]`` is data.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml
from markdown_it.token import Token

from fortemi.platform.markdown import markdown

__all__ = [
    "MAX_REFERENCES",
    "WikiRef",
    "front_matter",
    "reads_wiki_links",
    "references",
    "render",
    "split_front_matter",
]

# One note's references are stored one row each; past this many the rest are not kept
# (a generated index note linking every note stays cheap to re-version).
MAX_REFERENCES = 2000
# Front matter past this size is not read for aliases (the note itself is still read).
_MAX_FRONT_MATTER = 65_536

_WIKI_FORMATS = frozenset({"markdown", "md", "text/markdown", "plain", "text", "txt", "text/plain"})


@dataclass(frozen=True, slots=True)
class WikiRef:
    """One ``[[...]]`` as written: its target, heading, block and label trimmed, None when
    absent (``[[t#h#^b]]``: heading ``h``, block ``b``)."""

    target: str
    heading: str | None = None
    label: str | None = None
    embed: bool = False
    block: str | None = None

    def with_anchor(self) -> WikiRef:
        """The same reference with a ``^block`` at the end of its heading part moved to
        ``block`` (Obsidian's ``[[note#^id]]``, also after a heading: ``[[note#h#^id]]``)."""
        if self.heading is None:
            return self
        heading, caret, block = self.heading.rpartition("^")
        if not caret or (heading and not heading.endswith("#")):
            return self
        return replace(
            self, heading=heading.rstrip("#").strip() or None, block=block.strip() or None
        )


def render(ref: WikiRef) -> str:
    """``ref`` written back as wiki syntax (what :func:`references` reads it from)."""
    text = ref.target
    if ref.heading is not None:
        text += f"#{ref.heading}"
    if ref.block is not None:
        text += f"#^{ref.block}"
    if ref.label is not None:
        text += f"|{ref.label}"
    return f"{'!' if ref.embed else ''}[[{text}]]"


def reads_wiki_links(format: str) -> bool:
    return format.strip().lower() in _WIKI_FORMATS


def _reference(inner: str, embed: bool) -> WikiRef | None:
    """The reference ``[[inner]]`` makes; None for one into the note itself (``#Heading``)."""
    target_part, has_label, label = inner.replace("\\|", "|").partition("|")
    target, has_heading, heading = target_part.partition("#")
    target = target.strip()
    if not target:
        return None
    return WikiRef(
        target=target,
        heading=(heading.strip() or None) if has_heading else None,
        label=(label.strip() or None) if has_label else None,
        embed=embed,
    ).with_anchor()


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the YAML front matter, the rest) of ``text``; None when it has none.

    Front matter is a first line ``---`` and everything up to the next line ``---`` or
    ``...``; without that closing line there is none (the ``---`` is a rule).
    """
    if not text.startswith("---"):
        return None, text
    lines = text.splitlines(keepends=True)
    if lines[0].rstrip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text


def front_matter(text: str) -> dict[str, Any]:
    """The front matter's top-level mapping; empty when it has none or is not valid YAML."""
    raw, _ = split_front_matter(text)
    if raw is None or len(raw) > _MAX_FRONT_MATTER:
        return {}
    try:
        data = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError, ValueError):
        # A note's front matter is the author's text, not configuration: an invalid one
        # only means no aliases, never a failed save.
        return {}
    return data if isinstance(data, dict) else {}


def _walk(tokens: Sequence[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            # An image's alt text is parsed into the image token's children.
            yield from _walk(token.children)


def references(text: str, format: str = "markdown") -> list[WikiRef]:
    """Every wiki reference of ``text`` outside code and front matter, in order (at most
    :data:`MAX_REFERENCES`); none for a format that is not markdown or plain text."""
    if not reads_wiki_links(format) or "[[" not in text:
        return []
    _, body = split_front_matter(text)
    found: list[WikiRef] = []
    for token in _walk(markdown.parse(body)):
        if token.type != "wikilink":
            continue
        ref = _reference(token.content, token.meta["embed"])
        if ref is not None:
            found.append(ref)
            if len(found) == MAX_REFERENCES:
                break
    return found
