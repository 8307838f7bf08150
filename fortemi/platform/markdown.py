"""The one markdown tokenizer for notes: CommonMark (with tables and strikethrough) plus a
``wikilink`` inline rule, so every feature that reads a note's markdown agrees on what is
code, what is a link and what is text.

Wiki links are an inline rule of markdown-it-py rather than a pattern over raw text: fenced
and indented code blocks are never inline-parsed and code spans are consumed by the
backtick rule before any ``[``, exactly as a renderer would show them. A ``wikilink`` token
carries the link's inner text as ``content`` and ``meta["embed"]`` (written ``![[...]]``).
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

__all__ = ["MAX_WIKI_INNER", "markdown"]

# A reference longer than this is not one (titles are at most 500 characters).
MAX_WIKI_INNER = 1000


def _wikilink(state: StateInline, silent: bool) -> bool:
    """markdown-it inline rule: ``[[...]]`` or ``![[...]]`` at ``state.pos``.

    The inner text runs to the first ``]]`` and holds no bracket and no line break; a
    blank one is no link (the text stays text). In ``silent`` mode (the parser measuring a
    link label) it only consumes.
    """
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    if not embed and not src.startswith("[[", pos):
        return False
    start = pos + (3 if embed else 2)
    end = src.find("]]", start, start + MAX_WIKI_INNER + 2)
    if end < 0:
        return False
    inner = src[start:end]
    if not inner.strip() or any(c in inner for c in "[]\n\r"):
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.content = inner
        token.meta = {"embed": embed}
    state.pos = end + 2
    return True


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    # Before "link" and "image", which would read "[[x]]" as a bracketed text.
    md.inline.ruler.before("link", "wikilink", _wikilink)
    return md


markdown = _parser()
"""The shared tokenizer (``markdown.parse(text)``); it holds no per-parse state."""
