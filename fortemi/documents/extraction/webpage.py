"""HTML: the page's main content, not its navigation, through trafilatura.

trafilatura (maintained, used by research crawls and benchmarked on main-content
extraction) drops menus, headers, footers, cookie banners and boilerplate and keeps the
article, its headings, lists and tables, as markdown. A page too small or too plain for it
to find an article (a fragment, a one-paragraph page) falls back to the text of the body
with ``script``, ``style``, ``nav``, ``header``, ``footer`` and ``aside`` removed.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from fortemi.documents.extraction._run import Read, Run
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.text import read_text
from fortemi.documents.models import Detection

__all__ = ["HtmlAdapter", "html_to_text"]

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_KEPT = ("title", "author", "date", "sitename", "language")

_CHROME = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside",
           "form", "svg")  # fmt: skip


def html_to_text(html: str) -> tuple[str, dict[str, Any]]:
    """The main content of ``html`` as markdown, and the page's title and metadata."""
    import trafilatura

    markdown = trafilatura.extract(
        html, output_format="markdown", with_metadata=True, include_tables=True,
        include_comments=False, include_links=False,
    )  # fmt: skip
    metadata: dict[str, Any] = {}
    text = ""
    if markdown:
        text = markdown
        front = _FRONT_MATTER.match(markdown)
        if front is not None:  # trafilatura heads its markdown with the page's metadata
            text = markdown[front.end() :]
            try:
                found = yaml.safe_load(front[1])
            except yaml.YAMLError:
                found = None
            if isinstance(found, dict):
                metadata = {k: str(found[k]) for k in _KEPT if found.get(k)}
        text = text.strip()
    if not text:
        text, title = _body_text(html)
        metadata["method"] = "body"
        if title and "title" not in metadata:
            metadata["title"] = title
    else:
        metadata["method"] = "main_content"
    return text, metadata


def _body_text(html: str) -> tuple[str, str | None]:
    import lxml.html

    try:
        root = lxml.html.document_fromstring(html)
    except Exception:  # lxml rejects empty or control-character-only documents
        return "", None
    title = root.findtext(".//title")
    for element in root.iter(*_CHROME):
        element.drop_tree()
    body = root.find("body")
    text = (body if body is not None else root).text_content()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line), (title or "").strip() or None


class HtmlAdapter:
    name = "html"

    def health(self) -> Health:
        return Health(self.name, True, "trafilatura (main content), lxml")

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        source, truncated, _ = read_text(data, detection, run)
        text, metadata = html_to_text(source)
        return Read(text, metadata, truncated=truncated)
