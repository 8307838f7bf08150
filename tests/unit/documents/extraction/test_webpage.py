"""HTML: the main content, not the navigation."""

from __future__ import annotations

from fortemi.documents.extraction import ExtractionStatus
from tests.unit.documents.extraction._helpers import extract

ARTICLE = (
    b"<!doctype html><html><head><title>Site - Tides</title></head><body>"
    b"<header><a href='/'>Home</a> <a href='/shop'>Shop the sale</a></header>"
    b"<nav><ul><li><a href='/a'>Navigation entry one</a></li><li><a href='/b'>Entry two</a></li></ul></nav>"
    b"<main><article><h1>How tides work</h1>"
    + b"<p>The moon pulls the oceans, and the earth turns beneath the bulge it raises. </p>" * 12
    + b"</article></main><footer>Copyright 2025 Example footer text</footer></body></html>"
)


def test_an_article_page_gives_its_main_content_without_navigation() -> None:
    found = extract(ARTICLE, "tides.html")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "html")
    assert "The moon pulls the oceans" in found.text
    assert "Navigation entry one" not in found.text
    assert "Shop the sale" not in found.text
    assert "Example footer" not in found.text
    assert found.metadata == {"method": "main_content", "title": "Site - Tides", "truncated": False}


def test_a_fragment_too_small_for_an_article_falls_back_to_its_body_text() -> None:
    found = extract(b"<p>tiny fragment</p>", "frag.html")

    assert (found.text, found.metadata["method"]) == ("tiny fragment", "body")


def test_scripts_are_never_text() -> None:
    found = extract(b"<p>tiny fragment</p><script>var secret = 1;</script>", "frag.html")

    assert found.text == "tiny fragment"
