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

import hashlib
import html
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["PICTURE_PATH", "GraphPicturePage"]

PICTURE_PATH = "/graph"
ASSETS_PATH = "/graph/static"
_DIRECTORY = Path(__file__).parent / "static" / "graph"
_MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_FILES = ("fortemi-graph.css", "fortemi-graph.js")
_CACHE_FOREVER = "public, max-age=31536000, immutable"
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


@dataclass(frozen=True)
class _Asset:
    path: Path
    digest: str
    media_type: str


class GraphPicturePage:
    """The picture page and the routes serving it and its files."""

    def __init__(self, endpoint: str = "/graphql", directory: Path = _DIRECTORY) -> None:
        self._endpoint = endpoint
        self._assets: dict[str, _Asset] = {}
        for name in _FILES:
            path = directory / name
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            self._assets[name] = _Asset(path, digest, _MEDIA_TYPES[path.suffix])

    def url(self, name: str) -> str:
        return f"{ASSETS_PATH}/{self._assets[name].digest}/{name}"

    def routes(self) -> list[BaseRoute]:
        return [
            Route(PICTURE_PATH, self._page, methods=["GET", "HEAD"]),
            Route(f"{ASSETS_PATH}/{{digest}}/{{name}}", self._serve, methods=["GET", "HEAD"]),
        ]

    def render(self) -> HTMLResponse:
        page = _PAGE.format(
            style=self.url("fortemi-graph.css"),
            script=self.url("fortemi-graph.js"),
            endpoint=html.escape(self._endpoint),
        )
        return HTMLResponse(
            page,
            headers={
                "Content-Security-Policy": _PAGE_CSP,
                "Cache-Control": "no-cache",
                "Referrer-Policy": "no-referrer",
                "X-Content-Type-Options": "nosniff",
            },
        )

    async def _page(self, request: Request) -> Response:
        # The note and memory are read by the script from the URL, never put in the HTML.
        return self.render()

    async def _serve(self, request: Request) -> Response:
        asset = self._assets.get(request.path_params["name"])
        if asset is None or asset.digest != request.path_params["digest"]:
            return PlainTextResponse("Not Found", status_code=404)
        return FileResponse(
            asset.path,
            media_type=asset.media_type,
            headers={"Cache-Control": _CACHE_FOREVER, "X-Content-Type-Options": "nosniff"},
        )
