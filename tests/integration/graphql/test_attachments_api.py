"""Attachments end to end: multipart uploads, downloads, access, deletion, extraction."""

from __future__ import annotations

import blake3
import httpx
import pytest

from fortemi.runtime import Runtime
from tests.integration.graphql.attachments_support import (
    ATTACH,
    CREATE_FROM_FILE,
    attachment_uuid,
    run_extraction,
    upload,
)
from tests.integration.graphql.conftest import GraphQLCall, error_codes, open_memory


async def _note(gql: GraphQLCall, title: str = "Holder", **extra: object) -> str:
    body = await gql(
        "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
        {"i": {"title": title, "content": "a note with files", **extra}},
    )
    assert "errors" not in body, body
    note_id: str = body["data"]["createNote"]["id"]
    return note_id


async def test_an_uploaded_file_is_downloaded_byte_for_byte_as_an_attachment(
    live_server: str, gql: GraphQLCall, user_token: str, memory: str
) -> None:
    note_id = await _note(gql)
    content = b"Quarterly numbers\n" + bytes(range(256)) * 64
    async with httpx.AsyncClient(base_url=f"http://{live_server}") as http:
        response = await upload(
            http, ATTACH, {"n": note_id}, ("report.bin", content, None),
            token=user_token, memory=memory,
        )  # fmt: skip
        body = response.json()
        assert "errors" not in body, body
        attachment = body["data"]["attachFile"]
        assert attachment["size"] == len(content)
        assert attachment["digest"] == blake3.blake3(content).hexdigest()
        assert attachment["noteId"] == note_id
        download = await http.get(
            attachment["downloadPath"],
            headers={"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory},
        )
    assert download.status_code == 200
    assert download.content == content
    assert download.headers["content-disposition"].startswith("attachment;")
    assert 'filename="report.bin"' in download.headers["content-disposition"]
    assert download.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in download.headers["content-security-policy"]
    listed = await gql(
        "query($id: ID!) { note(id: $id) { attachments { id filename } } }", {"id": note_id}
    )
    assert listed["data"]["note"]["attachments"] == [
        {"id": attachment["id"], "filename": "report.bin"}
    ]


async def test_a_note_is_created_from_a_file_titled_after_it(
    client: httpx.AsyncClient, user_token: str, memory: str
) -> None:
    response = await upload(
        client, CREATE_FROM_FILE, {}, ("minutes.md", b"# Minutes\nWe agreed.", "text/markdown"),
        token=user_token, memory=memory,
    )  # fmt: skip
    body = response.json()
    assert "errors" not in body, body
    made = body["data"]["createNoteFromFile"]
    assert made["note"]["title"] == "minutes.md"
    assert made["attachment"]["noteId"] == made["note"]["id"]
    assert made["attachment"]["extractionStatus"] == "PENDING"
    assert made["attachment"]["documentType"]["name"] == "markdown"


async def test_the_same_bytes_on_two_notes_are_stored_once(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str, runtime: Runtime
) -> None:
    first, second = await _note(gql, "one"), await _note(gql, "two")
    content = b"shared bytes " * 1000
    digests = []
    for note_id, name in ((first, "a.txt"), (second, "b.txt")):
        response = await upload(
            client, ATTACH, {"n": note_id}, (name, content, "text/plain"),
            token=user_token, memory=memory,
        )  # fmt: skip
        digests.append(response.json()["data"]["attachFile"]["digest"])
    assert digests[0] == digests[1]
    async with runtime.db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM blob") == 1
        assert await conn.fetchval("SELECT count(*) FROM attachment") == 2
    blobs = runtime.settings.home / "blobs" / memory
    assert len([p for p in blobs.rglob("*") if p.is_file()]) == 1


async def test_an_upload_names_a_note_that_exists(
    client: httpx.AsyncClient, user_token: str, memory: str
) -> None:
    response = await upload(
        client, ATTACH, {"n": "0b3c1e9e-0000-4000-8000-000000000000"}, ("x.txt", b"x", None),
        token=user_token, memory=memory,
    )  # fmt: skip
    assert error_codes(response.json()) == ["NOT_FOUND"]


@pytest.mark.parametrize("mime", [None, "text/plain"])
async def test_a_zero_byte_file_is_kept_and_skipped_with_its_reason(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str, mime: str | None
) -> None:
    note_id = await _note(gql)
    response = await upload(
        client, ATTACH, {"n": note_id}, ("empty.txt", b"", mime), token=user_token, memory=memory
    )
    attachment = response.json()["data"]["attachFile"]
    assert attachment["size"] == 0
    assert attachment["extractionStatus"] == "SKIPPED"
    assert attachment["extractionReason"].startswith("empty_file")
    assert attachment["digest"] == blake3.blake3(b"").hexdigest()


async def test_extraction_makes_a_note_findable_by_its_attachment_without_a_new_version(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str, runtime: Runtime
) -> None:
    note_id = await _note(gql, "Procurement")
    text = b"The zanzibarian supplier ships quinoa pallets every Thursday.\n"
    response = await upload(
        client, ATTACH, {"n": note_id}, ("suppliers.txt", text, "text/plain"),
        token=user_token, memory=memory,
    )  # fmt: skip
    attachment = response.json()["data"]["attachFile"]
    search = """query($q: String!) { search(query: $q, mode: LEXICAL) { hits { note { id } } } }"""
    before = await gql(search, {"q": "zanzibarian"})
    assert before["data"]["search"]["hits"] == []
    outcome = await run_extraction(runtime, memory, attachment_uuid(attachment["id"]))
    assert outcome.kind == "success", outcome
    found = await gql(search, {"q": "zanzibarian quinoa"})
    assert [h["note"]["id"] for h in found["data"]["search"]["hits"]] == [note_id]
    note = await gql(
        """query($id: ID!) { note(id: $id) { version
             attachments { extractionStatus preview metadata } } }""",
        {"id": note_id},
    )
    assert note["data"]["note"]["version"] == 1
    (stored,) = note["data"]["note"]["attachments"]
    assert stored["extractionStatus"] == "DONE"
    assert "zanzibarian" in stored["preview"]
    async with runtime.db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM note_version") == 1
        assert await conn.fetchval("SELECT count(*) FROM attachment_chunk") >= 1


async def test_deleting_a_note_hides_its_attachments_and_purging_it_frees_unshared_blobs(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str, runtime: Runtime
) -> None:
    doomed, keeper = await _note(gql, "doomed"), await _note(gql, "keeper")
    shared, own = b"kept by the keeper too", b"only the doomed note has these bytes"
    ids = {}
    for note_id, name, content in ((doomed, "s.txt", shared), (doomed, "o.txt", own),
                                   (keeper, "s.txt", shared)):  # fmt: skip
        response = await upload(
            client, ATTACH, {"n": note_id}, (name, content, None), token=user_token, memory=memory
        )
        ids[(note_id, name)] = response.json()["data"]["attachFile"]["id"]
    headers = {"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": memory}
    own_id = ids[(doomed, "o.txt")]
    listing = "query($id: ID!) { note(id: $id) { attachments { filename deletedAt } } }"

    assert "errors" not in await gql(
        "mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": doomed}
    )
    hidden = await gql(listing, {"id": doomed})
    assert all(a["deletedAt"] for a in hidden["data"]["note"]["attachments"])
    assert (
        await client.get(f"/attachments/{attachment_uuid(own_id)}", headers=headers)
    ).status_code == 404

    await gql("mutation($id: ID!) { restoreNote(id: $id) { id } }", {"id": doomed})
    back = await gql(listing, {"id": doomed})
    assert not any(a["deletedAt"] for a in back["data"]["note"]["attachments"])

    await gql("mutation($id: ID!) { deleteNote(id: $id) { id } }", {"id": doomed})
    purged = await gql("mutation($id: ID!) { purgeNote(id: $id) }", {"id": doomed})
    assert purged["data"]["purgeNote"] is True
    store = runtime.services.attachments.store
    assert not await store.exists(memory, blake3.blake3(own).hexdigest())
    assert await store.exists(memory, blake3.blake3(shared).hexdigest())
    kept = await client.get(
        f"/attachments/{attachment_uuid(ids[(keeper, 's.txt')])}", headers=headers
    )
    assert kept.content == shared
    async with runtime.db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM blob") == 1


async def test_delete_attachment_removes_it_and_its_blob(
    client: httpx.AsyncClient, gql: GraphQLCall, user_token: str, memory: str, runtime: Runtime
) -> None:
    note_id = await _note(gql)
    response = await upload(
        client, ATTACH, {"n": note_id}, ("gone.txt", b"soon gone", None),
        token=user_token, memory=memory,
    )  # fmt: skip
    attachment = response.json()["data"]["attachFile"]
    body = await gql(
        "mutation($id: ID!) { deleteAttachment(id: $id) { id } }", {"id": attachment["id"]}
    )
    assert body["data"]["deleteAttachment"]["id"] == attachment["id"]
    assert not await runtime.services.attachments.store.exists(memory, attachment["digest"])
    again = await gql("query($id: ID!) { attachment(id: $id) { id } }", {"id": attachment["id"]})
    assert again["data"]["attachment"] is None


async def test_deleting_a_memory_removes_its_blobs(
    client: httpx.AsyncClient, user_token: str, admin_token: str, runtime: Runtime
) -> None:
    doomed = await open_memory(runtime)
    headers = {"Authorization": f"Bearer {user_token}", "X-Fortemi-Memory": doomed}
    made = await client.post(
        "/graphql",
        json={"query": 'mutation { createNote(input: {title: "x"}) { id } }'},
        headers=headers,
    )
    note_id = made.json()["data"]["createNote"]["id"]
    await upload(
        client, ATTACH, {"n": note_id}, ("f.txt", b"bytes", None), token=user_token, memory=doomed
    )
    folder = runtime.settings.home / "blobs" / doomed
    assert folder.exists()
    deleted = await client.post(
        "/graphql",
        json={
            "query": "mutation($n: String!) { deleteMemory(name: $n, confirm: $n) }",
            "variables": {"n": doomed},
        },
        headers={"Authorization": f"Bearer {admin_token}"},
    )
    assert deleted.json()["data"]["deleteMemory"] is True
    assert not folder.exists()
