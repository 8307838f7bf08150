"""``GET /attachments/{id}``: an attachment's bytes, behind the API's own checks.

The same bearer token and memory routing (``X-Fortemi-Memory``) as GraphQL; the caller
must be able to read the attachment's note. Not-found before forbidden: an absent
attachment, one in a memory the caller may not enter and one whose note the caller may
not read all answer the same 404, and the refusals are audited like any read.

The response is never rendered from the API's origin: ``Content-Disposition:
attachment``, ``X-Content-Type-Options: nosniff``, a CSP that allows nothing and
sandboxes the document, and the detected type, except for types a browser would run or
render as active content (HTML, SVG, XML, scripts), sent as ``application/octet-stream``.
"""

from __future__ import annotations

import json
import logging
import uuid
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fortemi.auth.tokens import bearer_token
from fortemi.graphql.attachments import parse_attachment_id
from fortemi.graphql.context import Context
from fortemi.graphql.services import Services
from fortemi.platform import logs
from fortemi.platform.errors import FortemiError, NotFound, Unauthenticated

__all__ = ["attachment_routes", "served_type"]

log = logging.getLogger(__name__)

# Types a browser may execute or render as a document of the API's origin.
_ACTIVE = (
    "text/html",
    "application/xhtml+xml",
    "image/svg+xml",
    "text/xml",
    "application/xml",
    "text/javascript",
    "application/javascript",
    "application/ecmascript",
    "text/ecmascript",
    "application/x-shockwave-flash",
    "text/xsl",
    "application/pdf",  # rendered by the browser's viewer, with its own script engine
    "multipart/",
    "message/",
)
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
}


def served_type(detected: str) -> str:
    """The Content-Type a download is sent with."""
    kind = detected.lower()
    if any(kind.startswith(active) for active in _ACTIVE) or "+xml" in kind:
        return "application/octet-stream"
    return kind


def _disposition(filename: str) -> str:
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\;' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


def _error(status: int, message: str, code: str) -> Response:
    body = {"errors": [{"message": message, "extensions": {"code": code}}]}
    return Response(json.dumps(body), status, media_type="application/json", headers=_HEADERS)


def attachment_routes(services: Services) -> list[Route]:
    async def download(request: Request) -> Response:
        request_id = uuid.uuid4().hex
        logs.request_id.set(request_id)
        try:
            principal = await services.tokens.validate(
                bearer_token(request.headers.get("authorization"))
            )
        except Unauthenticated as exc:
            log.info("rejected download %s: %s", request_id, exc.reason)
            response = _error(401, exc.message, exc.code)
            response.headers["WWW-Authenticate"] = 'Bearer realm="fortemi", error="invalid_token"'
            return response
        context = Context(
            services=services,
            request=request,
            request_id=request_id,
            principal=principal,
            memory_name=request.headers.get("x-fortemi-memory"),
        )
        gone = _error(404, "No such attachment that you may read", "NOT_FOUND")
        try:
            attachment_id = parse_attachment_id(request.path_params["id"])
            memory = await context.memory()
            found = await services.attachments.get(memory, attachment_id)
            if found is None or found.deleted_at is not None:
                return gone
            await context.readable_note(found.note_id)
        except NotFound:
            return gone
        except FortemiError as exc:
            if exc.code == "BAD_USER_INPUT":  # an id that is no attachment id names none
                return gone
            return _error(503 if exc.code == "SERVICE_UNAVAILABLE" else 400, exc.message, exc.code)
        headers = {
            **_HEADERS,
            "Content-Disposition": _disposition(found.filename),
            "Content-Length": str(found.size),
            "ETag": f'"{found.blob_digest}"',
        }
        return StreamingResponse(
            services.attachments.content(memory, found),
            media_type=served_type(found.mime_detected),
            headers=headers,
        )

    return [Route("/attachments/{id}", download, methods=["GET"])]
