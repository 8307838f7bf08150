"""The graph picture's page and files: this server's own, under a strict CSP."""

from __future__ import annotations

import re

from starlette.applications import Starlette
from starlette.testclient import TestClient

from fortemi.graphql.picture import GraphPicturePage


def _client() -> tuple[GraphPicturePage, TestClient]:
    page = GraphPicturePage()
    return page, TestClient(Starlette(routes=page.routes()))


def test_the_page_loads_its_script_and_style_from_this_server_only() -> None:
    page, client = _client()
    response = client.get("/graph?note=abc&memory=m")
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "unsafe" not in csp
    sources = re.findall(r'(?:src|href)="([^"]+)"', response.text)
    assert page.url("fortemi-graph.js") in sources
    assert page.url("fortemi-graph.css") in sources
    assert [s for s in sources if s.startswith("http")] == []
    # The note and memory stay in the URL for the script; nothing is echoed into the page.
    assert "abc" not in response.text


def test_files_are_served_only_under_their_current_digest() -> None:
    page, client = _client()
    script = client.get(page.url("fortemi-graph.js"))
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert "immutable" in script.headers["cache-control"]
    assert client.get("/graph/static/0000000000000000/fortemi-graph.js").status_code == 404
    assert client.get(page.url("fortemi-graph.js").replace("graph.js", "x.js")).status_code == 404
