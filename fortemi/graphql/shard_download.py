"""``GET /shards/{job id}``: the shard a completed ``exportShard`` job wrote, to its
memory's admins, with the bearer token GraphQL takes.

Anything the caller may not have (no such job, not a completed shard export, no ``admin``
on its memory: the decision is recorded in the audit log) is one 404, so the route never
tells another memory's export apart from none. Sent as an ``attachment`` with ``nosniff``:
a browser never renders it.
"""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from fortemi.auth.access import RequestTrace
from fortemi.auth.decision import Action, Resource
from fortemi.auth.tokens import bearer_token
from fortemi.documents.shards.jobs import SHARD_EXPORT, ShardFiles
from fortemi.graphql.services import Services
from fortemi.platform.errors import BadUserInput, Unauthenticated
from fortemi.platform.ids import parse_id
from fortemi.platform.jobs.models import JobStatus

__all__ = ["shard_download_route"]

_NOT_FOUND = {"error": "not_found", "message": "No shard export of that id is yours to read"}


def _is_encrypted(path: object) -> bool:
    from fortemi.documents.shards.archive import ENCRYPTED_MAGIC

    with open(str(path), "rb") as file:
        return file.read(len(ENCRYPTED_MAGIC)) == ENCRYPTED_MAGIC


def shard_download_route(services: Services) -> Route:
    files = ShardFiles.under(services.settings.home)

    async def download(request: Request) -> Response:
        request_id = uuid.uuid4().hex
        try:
            principal = await services.tokens.validate(
                bearer_token(request.headers.get("authorization"))
            )
        except Unauthenticated as exc:
            return JSONResponse(
                {"error": exc.code, "message": exc.message},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        try:
            job_id = parse_id(request.path_params["job"], "Job")
        except BadUserInput:
            return JSONResponse(_NOT_FOUND, status_code=404)
        job = await services.jobs.get(job_id)
        if (
            job is None
            or job.type != SHARD_EXPORT
            or job.memory is None
            or job.status != JobStatus.COMPLETED
        ):
            return JSONResponse(_NOT_FOUND, status_code=404)
        client = request.client.host if request.client else None
        trace = RequestTrace(trace_id=request_id, client_addr=client, job_id=str(job.id))
        decision = await services.authorizer.decide(
            principal, Action.ADMIN, Resource.of_memory(job.memory), trace
        )
        path = files.path(job.id)
        if not decision.allowed or not path.is_file():
            return JSONResponse(_NOT_FOUND, status_code=404)
        encrypted = _is_encrypted(path)
        return FileResponse(
            path,
            media_type="application/octet-stream" if encrypted else "application/gzip",
            filename=f"{job.memory}-{job.id}.shard" + (".mmpke" if encrypted else ""),
            content_disposition_type="attachment",
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"},
        )

    return Route("/shards/{job}", download, methods=["GET"])
