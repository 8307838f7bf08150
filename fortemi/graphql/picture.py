"""The graph picture: a page that draws a note's neighbourhood from the ``graph`` query.

``GET /graph?note=<id>&memory=<name>&depth=2&maxNodes=50`` serves a small HTML document;
its script (``static/graph/fortemi-graph.js``, Fortemi's own, no third-party code) asks
``/graphql`` for ``graph(noteId ...)`` with the caller's bearer token and draws the answer
as SVG: communities coloured, edge kinds told apart by line style and colour, a legend,
and the truncation reasons. Clicking a node re-centres the picture on it.

The token is the one GraphiQL keeps in this browser (same origin, same storage key), or
one typed into the page's own field: the page itself needs no token, every query does.
Unlike GraphiQL, the page is served in production too: it holds no schema and runs no
introspection, only the one query any client may send.

Files are served like GraphiQL's (:mod:`fortemi.graphql.ide`): at
``/graph/static/<digest>/<name>``, cacheable for a year, under a CSP that allows scripts,
styles and connections to this origin only. Why a hand-written force layout and not a
library: a neighbourhood is at most 1,000 nodes, a plain Fruchterman-Reingold of about a
hundred lines draws it in well under a second, and it keeps the page one small file with
no third-party code to vet, vendor and upgrade.
"""

from __future__ import annotations

import html
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from fortemi.graphql.assets import ShippedFiles, page_response

__all__ = ["PICTURE_PATH", "GraphPicturePage"]

PICTURE_PATH = "/graph"
ASSETS_PATH = "/graph/static"
_DIRECTORY = Path(__file__).parent / "static" / "graph"
_FILES = ("fortemi-graph.css", "fortemi-graph.js")
_PAGE_CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fortemi graph</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{style}">
</head>
<body>
<form id="fortemi-graph-form" autocomplete="off">
<label>Note <input id="fortemi-graph-note" name="note" spellcheck="false" size="30"></label>
<label>Memory <input id="fortemi-graph-memory" name="memory" spellcheck="false" size="12"></label>
<label>Depth <input id="fortemi-graph-depth" name="depth" type="number" min="0" max="10"
 value="2"></label>
<label>Max nodes <input id="fortemi-graph-max" name="maxNodes" type="number" min="1" max="1000"
 value="50"></label>
<label>Bearer token <input id="fortemi-graph-token" type="password" spellcheck="false"
 placeholder="kept from GraphiQL, or paste one"></label>
<button type="submit">Draw</button>
<span id="fortemi-graph-status" role="status" aria-live="polite"></span>
</form>
<main>
<svg id="fortemi-graph" data-endpoint="{endpoint}" role="img"
 aria-label="The note's neighbourhood"></svg>
<aside id="fortemi-graph-legend"></aside>
</main>
<script src="{script}"></script>
</body>
</html>
"""


class GraphPicturePage:
    """The picture page and the routes serving it and its files."""

    def __init__(self, endpoint: str = "/graphql", directory: Path = _DIRECTORY) -> None:
        self._endpoint = endpoint
        self._files = ShippedFiles(directory, _FILES, ASSETS_PATH)

    def url(self, name: str) -> str:
        return self._files.url(name)

    def routes(self) -> list[BaseRoute]:
        return [Route(PICTURE_PATH, self._page, methods=["GET", "HEAD"]), self._files.route()]

    def render(self) -> HTMLResponse:
        page = _PAGE.format(
            style=self.url("fortemi-graph.css"),
            script=self.url("fortemi-graph.js"),
            endpoint=html.escape(self._endpoint),
        )
        return page_response(page, _PAGE_CSP)

    async def _page(self, request: Request) -> Response:
        # The note and memory are read by the script from the URL, never put in the HTML.
        return self.render()
