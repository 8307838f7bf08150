"""HTML: the page's main content, not its navigation, through trafilatura.

trafilatura (maintained, used by research crawls and benchmarked on main-content
extraction) drops menus, headers, footers, cookie banners and boilerplate and keeps the
article, its headings, lists and tables, as markdown. A page too small or too plain for it
to find an article (a fragment, a one-paragraph page) falls back to the text of the body
with ``script``, ``style``, ``nav``, ``header``, ``footer`` and ``aside`` removed.
"""

from __future__ import annotations

from typing import Any

from fortemi.documents.extraction._run import Read, Run
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.text import read_text
from fortemi.documents.models import Detection

__all__ = ["HtmlAdapter", "html_to_text"]

_CHROME = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside",
           "form", "svg")  # fmt: skip


def html_to_text(html: str) -> tuple[str, dict[str, Any]]:
    """The main content of ``html`` as markdown, and the page's title."""
    import trafilatura

    # trafilatura's own metadata extraction (dates, authors, site names by heuristics)
    # took more time than the content itself; the title is read from <title>.
    markdown = trafilatura.extract(
        html, output_format="markdown", include_tables=True, include_comments=False,
        include_links=False,
    )  # fmt: skip
    text = (markdown or "").strip()
    method = "main_content"
    title = None
    if not text:
        text, title = _body_text(html)
        method = "body"
    else:
        title = _title(html)
    metadata: dict[str, Any] = {"method": method}
    if title:
        metadata["title"] = title
    return text, metadata


def _title(html: str) -> str | None:
    import lxml.html

    try:
        found = lxml.html.document_fromstring(html).findtext(".//title")
    except Exception:  # lxml rejects empty or control-character-only documents
        return None
    return " ".join((found or "").split()) or None


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
