"""Files shipped in the package, served by content digest, and the pages that load them.

Each file is served at ``<prefix>/<digest>/<name>``, where the digest is of the file's
content: a URL always names the same bytes, so browsers may cache it for a year, and an
upgraded file gets a new URL. Only the listed files are reachable, and only under their
current digest: nothing on disk is reachable by path, and an old URL never gets new bytes
under a year-long cache. Pages are served uncached with the CSP their caller gives.
GraphiQL (:mod:`fortemi.graphql.ide`) and the graph picture
(:mod:`fortemi.graphql.picture`) both stand on this.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["ShippedFiles", "page_response"]

_MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_CACHE_FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True, slots=True)
class _File:
    path: Path
    digest: str
    media_type: str


class ShippedFiles:
    """The files ``names`` of ``directory`` (each a .js or .css), served under ``prefix``."""

    def __init__(self, directory: Path, names: Sequence[str], prefix: str) -> None:
        self._prefix = prefix
        self._files: dict[str, _File] = {}
        for name in names:
            path = directory / name
            # A truncated digest is enough: it tells versions of one file apart, it is no
            # security boundary (the files are public).
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            self._files[name] = _File(path, digest, _MEDIA_TYPES[path.suffix])

    def url(self, name: str) -> str:
        """Where a page loads the shipped file ``name`` from."""
        return f"{self._prefix}/{self._files[name].digest}/{name}"

    def route(self) -> BaseRoute:
        return Route(f"{self._prefix}/{{digest}}/{{name}}", self._serve, methods=["GET", "HEAD"])

    async def _serve(self, request: Request) -> Response:
        found = self._files.get(request.path_params["name"])
        if found is None or found.digest != request.path_params["digest"]:
            return PlainTextResponse("Not Found", status_code=404)
        return FileResponse(
            found.path,
            media_type=found.media_type,
            headers={"Cache-Control": _CACHE_FOREVER, "X-Content-Type-Options": "nosniff"},
        )


def page_response(page: str, csp: str) -> HTMLResponse:
    """An HTML page under ``csp``, never cached (its file URLs change with the files)."""
    return HTMLResponse(
        page,
        headers={
            "Content-Security-Policy": csp,
            "Cache-Control": "no-cache",
            "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff",
        },
    )
