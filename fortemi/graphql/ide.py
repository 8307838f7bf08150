"""GraphiQL from files shipped in the package: the page needs no internet access.

The page is a small HTML document with a bearer-token field; it loads React, ReactDOM and
GraphiQL (pinned builds, listed with their licences in ``static/graphiql/README.md``) and
its own script from this server only, never from a CDN. Each file is served at
``/graphiql/static/<digest>/<name>``, where the digest is of the file's content: a URL
always names the same bytes, so browsers may cache it for a year, and an upgraded file
gets a new URL. The page itself forbids inline and foreign scripts with its CSP.
"""

from __future__ import annotations

import html
from pathlib import Path

from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute

from fortemi.graphql.assets import ShippedFiles, page_response

__all__ = ["ASSETS_PATH", "GraphiQLPage"]

ASSETS_PATH = "/graphiql/static"
_DIRECTORY = Path(__file__).parent / "static" / "graphiql"
# UMD builds publish globals: React before ReactDOM before GraphiQL, and ours, which uses
# all three, last.
_SCRIPTS = (
    "react.production.min.js",
    "react-dom.production.min.js",
    "graphiql.min.js",
    "fortemi-graphiql.js",
)
_STYLES = ("graphiql.min.css", "fortemi-graphiql.css")
# GraphiQL's fonts are data: URLs in its CSS; 'self' in connect-src covers the same
# origin's ws:/wss: for subscriptions (CSP level 3).
_PAGE_CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self' data:",
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
<title>Fortemi GraphiQL</title>
<link rel="icon" href="data:,">
{styles}
</head>
<body>
<form id="fortemi-token" autocomplete="off">
<label for="fortemi-token-input">Bearer token</label>
<input id="fortemi-token-input" type="password" spellcheck="false"
 placeholder="paste the token printed by fortemi serve or fortemi token">
<button type="submit">Use token</button>
<button type="button" id="fortemi-token-forget">Forget</button>
<span id="fortemi-token-status" role="status" aria-live="polite"></span>
</form>
<div id="graphiql" data-endpoint="{endpoint}">Loading GraphiQL...</div>
{scripts}
</body>
</html>
"""


class GraphiQLPage:
    """The GraphiQL page and the route serving its files."""

    def __init__(self, directory: Path = _DIRECTORY) -> None:
        self._files = ShippedFiles(directory, (*_STYLES, *_SCRIPTS), ASSETS_PATH)

    def url(self, name: str) -> str:
        """Where the page loads the shipped file ``name`` from."""
        return self._files.url(name)

    def routes(self) -> list[BaseRoute]:
        return [self._files.route()]

    def render(self, endpoint: str) -> HTMLResponse:
        """The page, for a GraphQL endpoint at ``endpoint`` on this origin."""
        styles = "\n".join(f'<link rel="stylesheet" href="{self.url(n)}">' for n in _STYLES)
        scripts = "\n".join(f'<script src="{self.url(n)}"></script>' for n in _SCRIPTS)
        page = _PAGE.format(styles=styles, scripts=scripts, endpoint=html.escape(endpoint))
        return page_response(page, _PAGE_CSP)
