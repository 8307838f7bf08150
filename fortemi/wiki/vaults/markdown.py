"""What a vault note's markdown says about itself: front matter, first heading, inline tags.

What is a tag is decided on CommonMark's tokens (markdown-it-py), not by patterns over the
raw text: a ``#word`` inside a fenced or indented code block, a code span, a link's text
or a ``[[note#heading]]`` is not a tag, and neither is an ATX heading's ``#``. Only text
tokens are looked at, so markdown-it's own rules have already taken out everything that is
code, markup or a link. ``[[...]]`` is taken out by an inline rule of its own (the same
syntax as the knowledge graph's wiki-link reader) so that its ``#heading`` is never read.

The tag syntax is Obsidian's: ``#`` at the start of a text or after whitespace, then
letters, digits, ``_``, ``-`` and ``/`` (nested tags), with at least one character that is
not a digit (``#1`` is an issue number, not a tag).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it.token import Token

from fortemi.platform.markdown import markdown

__all__ = ["FrontMatterError", "Markdown", "read_front_matter", "read_markdown"]

# Both construct only plain data (SafeConstructor); the C one parses with libyaml.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = re.compile(r"#([\w/-]+)")


class FrontMatterError(ValueError):
    """The front matter is not valid YAML or not a mapping; ``line`` is in the file."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True, slots=True)
class Markdown:
    """What the body says: its first level-1 heading (plain text) and its inline tags."""

    heading: str | None
    tags: tuple[str, ...]


def _split(text: str) -> tuple[str | None, str, int]:
    """(front matter, body, line of the body's first line): the front matter is a first
    line ``---`` up to the next line ``---`` or ``...`` (the rule of
    :func:`fortemi.graph.links.wiki.split_front_matter`, which the link reader applies to
    the same text); without a closing line there is none."""
    if not text.startswith("---"):
        return None, text, 1
    lines = text.splitlines(keepends=True)
    if lines[0].rstrip() != "---":
        return None, text, 1
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    return None, text, 1


def read_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter's mapping (empty when there is none) and the body after it.

    Raises :class:`FrontMatterError` for invalid YAML (with the file's line) or a front
    matter that is not a mapping: a note's metadata is not guessed from a broken header.
    """
    raw, body, _ = _split(text)
    if raw is None or not raw.strip():
        return {}, body
    loader = _SafeLoader(raw)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # +1 for 1-based lines, +1 for the opening "---".
        line = None if mark is None else mark.line + 2
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise FrontMatterError(f"front matter is not valid YAML: {problem}", line) from exc
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise FrontMatterError(f"front matter is not valid YAML: {exc}", None) from exc
    finally:
        loader.dispose()
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise FrontMatterError("front matter must be a mapping of keys to values", 2)
    return data, body


def _is_tag(name: str) -> bool:
    return any(not c.isdigit() for c in name.replace("/", "").replace("-", "").replace("_", ""))


def _tags_in(text: str) -> Iterator[str]:
    for match in _TAG.finditer(text):
        start = match.start()
        if start > 0 and not text[start - 1].isspace():
            continue  # "a#b", "C#", "page/#anchor": not tags
        name = match.group(1).strip("/")
        if name and _is_tag(name):
            yield name


def _plain(children: Sequence[Token]) -> str:
    """A heading's inline tokens as plain text (markup dropped, code and links' text kept)."""
    parts: list[str] = []
    for token in children:
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type == "wikilink":
            target, _, label = token.content.partition("|")
            parts.append((label or target).strip())
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def read_markdown(body: str) -> Markdown:
    """The first ``# `` heading and the inline tags of ``body`` (front matter removed)."""
    tokens = markdown.parse(body)
    heading: str | None = None
    tags: dict[str, None] = {}  # an ordered set
    in_heading = False
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            in_heading = True
            if heading is None and token.tag == "h1" and index + 1 < len(tokens):
                heading = _plain(tokens[index + 1].children or []) or None
        elif token.type == "heading_close":
            in_heading = False
        elif token.type == "inline" and not in_heading:
            link_depth = 0
            for child in token.children or []:
                if child.type == "link_open":
                    link_depth += 1
                elif child.type == "link_close":
                    link_depth -= 1
                elif child.type == "text" and link_depth == 0:
                    tags.update(dict.fromkeys(_tags_in(child.content)))
    return Markdown(heading, tuple(tags))
