"""Hostile uploads are refused or contained: size limits, MIME lies, polyglots, active
content, and downloads guarded like reads (not-found before forbidden)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from fortemi.app import UPLOAD_OVERHEAD_BYTES, create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.documents.attachments.storage import staging_dir
from fortemi.runtime import Runtime, attachment_service
from tests.integration.graphql.attachments_support import (
    ATTACH,
    CREATE_FROM_FILE,
    attachment_uuid,
    upload,
)
from tests.integration.graphql.conftest import GraphQLCall, error_codes

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
    b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)
LIMIT = 4096


async def _note(gql: GraphQLCall, **extra: object) -> str:
    body = await gql(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": {"title": "Holder", "content": "files", **extra}},
        **{k: extra.pop(k) for k in ("token",) if k in extra},  # type: ignore[arg-type]
    )
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


def _headers(token: str, memory: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory}


@pytest.fixture
async def small_client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """The app with a 4 KiB upload limit."""
    settings = runtime.settings.model_copy(update={"max_upload_bytes": LIMIT})
    services = runtime.services
    small = attachment_service(
        settings,
        runtime.db,
        services.attachments.store,
        services.documents,
        services.notes,
        services.jobs,
    )
    variant = dataclasses.replace(
        runtime, settings=settings, services=dataclasses.replace(services, attachments=small)
    )
    transport = httpx.ASGITransport(app=create_app(variant))
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as c:
        yield c


def _staged(runtime: Runtime) -> list[Path]:
    return list(staging_dir(runtime.settings).glob("upload-*"))


@pytest.mark.parametrize("size", [LIMIT + 1, LIMIT + UPLOAD_OVERHEAD_BYTES + 1])
async def test_an_upload_over_the_limit_is_refused_and_nothing_is_stored(
    small_client: httpx.AsyncClient,
    gql: GraphQLCall,
    user_token: str,
    memory: str,
    runtime: Runtime,
    size: int,
) -> None:
    note_id = await _note(gql)
    response = await upload(
        small_client, ATTACH, {"n": note_id}, ("big.bin", b"x" * size, None),
        token=user_token, memory=memory,
    )  # fmt: skip
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["reason"] == "file_too_large"
    assert "FORTEMI_MAX_UPLOAD_BYTES" in error["message"]
    async with runtime.db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM attachment") == 0
        assert await conn.fetchval("SELECT count(*) FROM blob") == 0
    assert not (runtime.settings.home / "blobs" / memory).exists()
    assert _staged(runtime) == []


async def test_a_file_at_the_limit_is_accepted(
    small_client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    note_id = await _note(gql)
    response = await upload(
        small_client, ATTACH, {"n": note_id}, ("edge.bin", b"y" * LIMIT, None),
        token=user_token, memory=memory,
    )  # fmt: skip
    assert response.json()["data"]["attachFile"]["size"] == LIMIT


async def test_a_mime_lie_is_answered_with_the_content_type_and_kept_on_record(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    note_id = await _note(gql)
    response = await upload(
        client, ATTACH, {"n": note_id}, ("notes.txt", PNG, "text/plain"),
        token=user_token, memory=memory,
    )  # fmt: skip
    attachment = response.json()["data"]["attachFile"]
    assert attachment["mimeDeclared"] == "text/plain"
    assert attachment["mimeDetected"] == "image/png"
    assert attachment["documentType"]["method"] in ("NAME_MISMATCH", "MIME_MISMATCH")
    download = await client.get(attachment["downloadPath"], headers=_headers(user_token, memory))
    assert download.headers["content-type"] == "image/png"
    assert download.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("name", "mime", "content"),
    [
        ("page.html", "text/html", b"<!doctype html><script>alert(document.cookie)</script>"),
        (
            "logo.svg",
            None,
            b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        ),
        (
            "feed.xml",
            "application/xml",
            b'<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>',
        ),
    ],
)
async def test_active_content_is_served_as_an_opaque_download(
    client: httpx.AsyncClient,
    gql: GraphQLCall,
    user_token: str,
    memory: str,
    name: str,
    mime: str | None,
    content: bytes,
) -> None:
    note_id = await _note(gql)
    response = await upload(
        client, ATTACH, {"n": note_id}, (name, content, mime), token=user_token, memory=memory
    )
    attachment = response.json()["data"]["attachFile"]
    download = await client.get(attachment["downloadPath"], headers=_headers(user_token, memory))
    assert download.status_code == 200
    assert download.headers["content-type"] == "application/octet-stream"
    assert download.headers["content-disposition"].startswith("attachment;")
    assert download.headers["x-content-type-options"] == "nosniff"
    assert download.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert download.content == content


async def test_a_polyglot_is_served_as_what_it_was_taken_for_and_never_inline(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    polyglot = b"GIF89a/*\x00\x00*/=1;<script>alert(1)</script>"
    note_id = await _note(gql)
    response = await upload(
        client, ATTACH, {"n": note_id}, ("cat.gif", polyglot, "image/gif"),
        token=user_token, memory=memory,
    )  # fmt: skip
    attachment = response.json()["data"]["attachFile"]
    download = await client.get(attachment["downloadPath"], headers=_headers(user_token, memory))
    assert download.headers["content-type"] == "image/gif"
    assert download.headers["content-disposition"].startswith("attachment;")
    assert download.headers["x-content-type-options"] == "nosniff"


async def test_a_filename_with_a_path_keeps_only_its_last_component(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    note_id = await _note(gql)
    response = await upload(
        client, ATTACH, {"n": note_id}, ("../../etc/pass;wd", b"root:x:0:0", None),
        token=user_token, memory=memory,
    )  # fmt: skip
    attachment = response.json()["data"]["attachFile"]
    assert attachment["filename"] == "pass;wd"
    download = await client.get(attachment["downloadPath"], headers=_headers(user_token, memory))
    assert 'filename="pass_wd"' in download.headers["content-disposition"]


async def test_a_caller_who_may_not_read_the_note_gets_not_found_for_its_attachment(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str, issuer: LocalIssuer
) -> None:
    dana = issuer.mint("dana", groups=["platform-team"], roles=["editor"])
    body = await gql(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": {"title": "Poimen runbook", "content": "x", "project": "poimen"}},
        token=dana,
    )
    hidden_note = body["data"]["createNote"]["id"]
    response = await upload(
        client, ATTACH, {"n": hidden_note}, ("secret.txt", b"rotation keys", None),
        token=dana, memory=memory,
    )  # fmt: skip
    attachment = response.json()["data"]["attachFile"]
    path = attachment["downloadPath"]
    assert (await client.get(path, headers=_headers(dana, memory))).status_code == 200
    refused = await client.get(path, headers=_headers(user_token, memory))
    missing = await client.get(
        "/attachments/7d2a4f0e-0000-4000-8000-000000000000", headers=_headers(user_token, memory)
    )
    assert refused.status_code == missing.status_code == 404
    assert refused.json() == missing.json()
    assert b"rotation" not in refused.content
    as_alice = await gql("query($id: ID!) { attachment(id: $id) { id } }", {"id": attachment["id"]})
    assert as_alice["data"]["attachment"] is None
    # Nor may alice attach to it: the note does not exist for her.
    upload_refused = await upload(
        client, ATTACH, {"n": hidden_note}, ("x.txt", b"x", None), token=user_token, memory=memory
    )
    assert error_codes(upload_refused.json()) == ["NOT_FOUND"]
    assert attachment_uuid(attachment["id"])


async def test_a_download_needs_a_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/attachments/7d2a4f0e-0000-4000-8000-000000000000")
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_download_of_an_id_that_is_no_attachment_is_not_found(
    client: httpx.AsyncClient, user_token: str, memory: str
) -> None:
    response = await client.get("/attachments/not-an-id", headers=_headers(user_token, memory))
    assert response.status_code == 404


async def test_a_file_variable_sent_as_json_is_refused_with_how_to_send_it(
    gql: GraphQLCall,
) -> None:
    note_id = await _note(gql)
    body = await gql(ATTACH, {"n": note_id, "file": "aGVsbG8="})
    assert error_codes(body) == ["BAD_USER_INPUT"]
    assert "multipart" in body["errors"][0]["message"]


async def test_a_note_from_a_file_over_the_limit_is_never_made(
    small_client: httpx.AsyncClient, user_token: str, memory: str, runtime: Runtime
) -> None:
    response = await upload(
        small_client, CREATE_FROM_FILE, {}, ("big.txt", b"z" * (LIMIT + 1), None),
        token=user_token, memory=memory,
    )  # fmt: skip
    assert response.json()["errors"][0]["extensions"]["reason"] == "file_too_large"
    async with runtime.db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM note") == 0
        assert await conn.fetchval("SELECT count(*) FROM blob") == 0
