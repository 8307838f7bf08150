"""GraphiQL from files shipped in the package: the page needs no internet access.

The page is a small HTML document with a bearer-token field; it loads React, ReactDOM and
GraphiQL (pinned builds, listed with their licences in ``static/graphiql/README.md``) and
its own script from this server only, never from a CDN. Each file is served at
``/graphiql/static/<digest>/<name>``, where the digest is of the file's content: a URL
always names the same bytes, so browsers may cache it for a year, and an upgraded file
gets a new URL. The page itself forbids inline and foreign scripts with its CSP.
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["ASSETS_PATH", "GraphiQLPage"]

ASSETS_PATH = "/graphiql/static"
_DIRECTORY = Path(__file__).parent / "static" / "graphiql"
_MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# UMD builds publish globals: React before ReactDOM before GraphiQL, and ours, which uses
# all three, last.
_SCRIPTS = (
    "react.production.min.js",
    "react-dom.production.min.js",
    "graphiql.min.js",
    "fortemi-graphiql.js",
)
_STYLES = ("graphiql.min.css", "fortemi-graphiql.css")
_CACHE_FOREVER = "public, max-age=31536000, immutable"
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


@dataclass(frozen=True)
class _Asset:
    path: Path
    digest: str
    media_type: str


class GraphiQLPage:
    """The GraphiQL page and the routes serving its files."""

    def __init__(self, directory: Path = _DIRECTORY) -> None:
        self._assets: dict[str, _Asset] = {}
        for name in (*_STYLES, *_SCRIPTS):
            path = directory / name
            # A truncated digest is enough: it tells versions of one file apart, it is no
            # security boundary (the files are public).
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            self._assets[name] = _Asset(path, digest, _MEDIA_TYPES[path.suffix])

    def url(self, name: str) -> str:
        """Where the page loads the shipped file ``name`` from."""
        return f"{ASSETS_PATH}/{self._assets[name].digest}/{name}"

    def routes(self) -> list[BaseRoute]:
        return [Route(f"{ASSETS_PATH}/{{digest}}/{{name}}", self._serve, methods=["GET", "HEAD"])]

    def render(self, endpoint: str) -> HTMLResponse:
        """The page, for a GraphQL endpoint at ``endpoint`` on this origin."""
        styles = "\n".join(f'<link rel="stylesheet" href="{self.url(n)}">' for n in _STYLES)
        scripts = "\n".join(f'<script src="{self.url(n)}"></script>' for n in _SCRIPTS)
        page = _PAGE.format(styles=styles, scripts=scripts, endpoint=html.escape(endpoint))
        return HTMLResponse(
            page,
            headers={
                "Content-Security-Policy": _PAGE_CSP,
                "Cache-Control": "no-cache",
                "Referrer-Policy": "no-referrer",
                "X-Content-Type-Options": "nosniff",
            },
        )

    async def _serve(self, request: Request) -> Response:
        # Only the listed files, and only under their current digest: nothing on disk is
        # reachable by path, and an old URL never gets new bytes under a year-long cache.
        asset = self._assets.get(request.path_params["name"])
        if asset is None or asset.digest != request.path_params["digest"]:
            return PlainTextResponse("Not Found", status_code=404)
        return FileResponse(
            asset.path,
            media_type=asset.media_type,
            headers={"Cache-Control": _CACHE_FOREVER, "X-Content-Type-Options": "nosniff"},
        )
