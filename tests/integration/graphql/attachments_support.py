"""Uploads by the GraphQL multipart request spec, and running the Extraction job."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import httpx

from fortemi.documents.attachments.service import EXTRACTION
from fortemi.platform.ids import parse_id
from fortemi.platform.jobs.models import JobOutcome, JobSpec
from fortemi.runtime import Runtime, job_registry
from tests.integration.graph.conftest import run_job

ATTACHMENT_FIELDS = """id noteId filename size digest mimeDeclared mimeDetected
  documentType { name confidence method } extractionStatus extractionReason preview metadata
  extractedFrom downloadPath createdAt deletedAt"""
ATTACH = f"""mutation($n: ID!, $file: Upload!) {{
  attachFile(noteId: $n, file: $file) {{ {ATTACHMENT_FIELDS} }} }}"""
CREATE_FROM_FILE = f"""mutation($file: Upload!, $i: CreateNoteInput) {{
  createNoteFromFile(file: $file, input: $i) {{
    note {{ id title version }} attachment {{ {ATTACHMENT_FIELDS} }} }} }}"""


async def upload(
    client: httpx.AsyncClient,
    query: str,
    variables: dict[str, Any],
    file: tuple[str, bytes, str | None],
    *,
    token: str | None,
    memory: str | None,
) -> httpx.Response:
    """One multipart request: ``operations``, ``map`` and the file as part ``0``."""
    operations = {"query": query, "variables": {**variables, "file": None}}
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if memory is not None:
        headers["X-Fortemi-Memory"] = memory
    name, content, mime = file
    part = (name, content) if mime is None else (name, content, mime)
    return await client.post(
        "/graphql",
        data={"operations": json.dumps(operations), "map": json.dumps({"0": ["variables.file"]})},
        files={"0": part},
        headers=headers,
    )


def attachment_uuid(global_id: str) -> UUID:
    return parse_id(global_id, "Attachment")


async def run_extraction(
    runtime: Runtime, memory: str, attachment_id: UUID, enqueued: list[JobSpec] | None = None
) -> JobOutcome:
    """The registered Extraction handler, run as a worker runs it."""
    job_type = job_registry(runtime.settings, backend=runtime.backend)(runtime.db).get(EXTRACTION)
    return await run_job(
        job_type,
        memory,
        {"attachment_id": str(attachment_id)},
        enqueued if enqueued is not None else [],
    )
