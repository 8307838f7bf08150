"""``GET /metrics`` and the HTTP request metrics behind it.

Access: with ``FORTEMI_METRICS_TOKEN`` set, a scraper sends it as a bearer token (compared
in constant time); without it, only loopback clients are answered, so a development server
never shows its operation names and job counts to its network. Anything else gets 404, as
if there were no such page.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fortemi.platform.jobs.models import JobStatus, Tier
from fortemi.platform.metrics import (
    CONTENT_TYPE,
    EMBEDDING_BACKLOG,
    HTTP_REQUEST_SECONDS,
    HTTP_REQUESTS,
    JOBS,
    exposition,
)
from fortemi.retrieval.indexing import EMBEDDING
from fortemi.runtime import Runtime

__all__ = ["RequestMetrics", "metrics_endpoint"]

_LIVE = (JobStatus.PENDING, JobStatus.RUNNING)


class RequestMetrics:
    """Counts and times every HTTP request by route template (never the raw path, which a
    client could vary without end), method and status. A pure ASGI middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers if the app raises before responding

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            method = scope["method"] if scope["method"] in _METHODS else "other"
            HTTP_REQUESTS.labels(path, method, str(status)).inc()
            HTTP_REQUEST_SECONDS.labels(path, method).observe(time.perf_counter() - started)


_METHODS = frozenset({"GET", "POST", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})


def _allowed(request: Request, runtime: Runtime) -> bool:
    token = runtime.settings.metrics_token
    if token is not None:
        given = request.headers.get("authorization", "")
        expected = f"Bearer {token.get_secret_value()}"
        return hmac.compare_digest(given.encode(), expected.encode())
    client = request.client
    try:
        return client is not None and ipaddress.ip_address(client.host).is_loopback
    except ValueError:  # a Unix socket or a test client's made-up host
        return False


def metrics_endpoint(runtime: Runtime) -> Callable[[Request], Awaitable[Response]]:
    """The ``/metrics`` handler over an open runtime."""

    async def metrics(request: Request) -> Response:
        if not _allowed(request, runtime):
            return PlainTextResponse("Not Found", status_code=404)
        await _refresh_job_gauges(runtime)
        return Response(exposition(), media_type=CONTENT_TYPE)

    return metrics


async def _refresh_job_gauges(runtime: Runtime) -> None:
    """Live job counts from PostgreSQL: the shared truth, the same from every replica."""
    counts = {(tier, status): 0 for tier in Tier for status in _LIVE}
    backlog = 0
    for row in await runtime.jobs.live():
        counts[row.tier, row.status] += row.count
        if row.type == EMBEDDING:
            backlog += row.count
    for (tier, status), count in counts.items():
        JOBS.labels(tier.value, status.value).set(count)
    EMBEDDING_BACKLOG.set(backlog)
