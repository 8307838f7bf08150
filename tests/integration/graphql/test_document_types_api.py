"""Document types through GraphQL: detection, chunk previews, a memory's custom types
(memory admins only, validated, tried before system types) and Note.documentType."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import pytest

from fortemi.auth.audit.models import AuditRecord
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

DETECT = """
query($f: String, $m: String, $c: String, $e: ContentEncoding) {
  detectDocumentType(filename: $f, mimeType: $m, content: $c, contentEncoding: $e) {
    name confidence method flaggedForReview strategy claimed type { category mimeTypes }
  }
}"""
CREATE = """
mutation($i: DocumentTypeInput!) {
  createDocumentType(input: $i) { name system category chunking chunkSize extensions mimeTypes }
}"""
UPDATE = """
mutation($n: String!, $i: DocumentTypePatch!) {
  updateDocumentType(name: $n, input: $i) { name displayName chunkSize extensions }
}"""
DELETE = "mutation($n: String!) { deleteDocumentType(name: $n) }"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
MEMO = {
    "name": "meeting-memo",
    "displayName": "Meeting memo",
    "category": "PROSE",
    "extensions": [".memo", ".md"],
    "filenamePatterns": ["MINUTES-*"],
}


async def _detect(gql: GraphQLCall, **variables: Any) -> dict[str, Any]:
    body = await gql(DETECT, variables)
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]["detectDocumentType"]
    return found


async def test_detection_reports_type_method_confidence_and_strategy(gql: GraphQLCall) -> None:
    by_name = await _detect(gql, f="Cargo.toml")
    by_content = await _detect(gql, c="#!/usr/bin/env bash\necho hi\n")

    assert by_name == {
        "name": "cargo-manifest", "confidence": 1.0, "method": "FILENAME",
        "flaggedForReview": False, "strategy": "FIXED", "claimed": None,
        "type": {"category": "DATA", "mimeTypes": ["application/x-cargo-manifest"]},
    }  # fmt: skip
    assert (by_content["name"], by_content["method"]) == ("shell", "SHEBANG")
    assert (by_content["confidence"], by_content["flaggedForReview"]) == (0.7, True)


async def test_binary_content_is_sent_as_base64_and_a_mime_lie_is_recorded(
    gql: GraphQLCall,
) -> None:
    encoded = base64.b64encode(PNG).decode()

    lie = await _detect(gql, f="report.pdf", m="application/pdf", c=encoded, e="BASE64")
    noise = await _detect(gql, c=base64.b64encode(bytes(range(256))).decode(), e="BASE64")

    assert (lie["name"], lie["method"], lie["claimed"]) == ("png", "MIME_MISMATCH", "pdf")
    assert (noise["name"], noise["method"], noise["confidence"]) == ("binary", "FALLBACK", 0.1)


async def test_bad_content_is_refused_with_the_reason(gql: GraphQLCall) -> None:
    not_base64 = await gql(DETECT, {"c": "not base64!", "e": "BASE64"})
    too_large = await gql(DETECT, {"c": "x" * 70000})

    for body, reason in ((not_base64, "invalid_base64"), (too_large, "too_large")):
        [error] = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert (error["extensions"]["reason"], error["extensions"]["field"]) == (reason, "content")


async def test_a_memory_admin_creates_a_custom_type_that_detection_tries_first(
    gql: GraphQLCall, admin_token: str
) -> None:
    before = await _detect(gql, f="notes.md")

    body = await gql(CREATE, {"i": MEMO}, token=admin_token)
    after = await _detect(gql, f="notes.md")
    by_pattern = await _detect(gql, f="MINUTES-2024-05.txt")
    listed = await gql("{ documentTypes(category: PROSE) { name system } }")

    assert "errors" not in body, body
    assert body["data"]["createDocumentType"] == {
        "name": "meeting-memo", "system": False, "category": "PROSE", "chunking": "SEMANTIC",
        "chunkSize": 1000, "extensions": [".memo", ".md"], "mimeTypes": [],
    }  # fmt: skip
    assert before["name"] == "markdown"
    assert (after["name"], after["method"]) == ("meeting-memo", "EXTENSION")
    assert (by_pattern["name"], by_pattern["method"]) == ("meeting-memo", "FILENAME")
    types = listed["data"]["documentTypes"]
    assert types[0] == {"name": "meeting-memo", "system": False}
    assert {"name": "markdown", "system": True} in types


async def test_custom_types_change_and_go_only_through_memory_admins(
    gql: GraphQLCall, admin_token: str
) -> None:
    refused = await gql(CREATE, {"i": MEMO})  # alice is an editor, not an admin
    await gql(CREATE, {"i": MEMO}, token=admin_token)
    refused_update = await gql(UPDATE, {"n": "meeting-memo", "i": {"chunkSize": 600}})
    refused_delete = await gql(DELETE, {"n": "meeting-memo"})
    updated = await gql(
        UPDATE,
        {"n": "meeting-memo", "i": {"chunkSize": 600, "displayName": "Memo"}},
        token=admin_token,
    )
    deleted = await gql(DELETE, {"n": "meeting-memo"}, token=admin_token)
    again = await gql(DELETE, {"n": "meeting-memo"}, token=admin_token)
    gone = await gql('{ documentType(name: "meeting-memo") { name } }')

    assert error_codes(refused) == error_codes(refused_update) == ["FORBIDDEN"]
    assert error_codes(refused_delete) == ["FORBIDDEN"]
    assert updated["data"]["updateDocumentType"] == {
        "name": "meeting-memo", "displayName": "Memo", "chunkSize": 600, "extensions": [".memo", ".md"],
    }  # fmt: skip
    assert deleted["data"] == {"deleteDocumentType": True}
    assert error_codes(again) == ["NOT_FOUND"]
    assert gone["data"] == {"documentType": None}


async def test_each_custom_type_decision_is_recorded_in_the_audit_log(
    gql: GraphQLCall, admin_token: str, runtime: Runtime, memory: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    recorded: list[AuditRecord] = []
    record = runtime.audit.record

    async def recording(records: Sequence[AuditRecord]) -> None:
        recorded.extend(records)
        await record(records)

    monkeypatch.setattr(runtime.audit, "record", recording)
    await gql(CREATE, {"i": MEMO})
    await gql(CREATE, {"i": MEMO}, token=admin_token)

    admin = [
        (r.user_id, r.decision) for r in recorded if r.action == "admin" and r.memory == memory
    ]
    assert admin == [("alice", "deny"), ("root", "allow")]


async def test_system_types_are_read_only(gql: GraphQLCall, admin_token: str) -> None:
    update = await gql(UPDATE, {"n": "python", "i": {"chunkSize": 500}}, token=admin_token)
    delete = await gql(DELETE, {"n": "markdown"}, token=admin_token)
    shadow = await gql(CREATE, {"i": {**MEMO, "name": "python"}}, token=admin_token)
    python = await gql('{ documentType(name: "python") { system chunkSize } }')

    for body in (update, delete, shadow):
        [error] = body["errors"]
        assert error["extensions"]["code"] == "CONFLICT"
        assert error["extensions"]["reason"] == "system_type_read_only"
    assert python["data"]["documentType"] == {"system": True, "chunkSize": 1000}


async def test_a_malformed_custom_type_is_bad_user_input_naming_the_field(
    gql: GraphQLCall, admin_token: str
) -> None:
    cases = [
        ({**MEMO, "mimeTypes": ["text/x-memo", "memo"]}, "mimeTypes[1]"),
        ({**MEMO, "chunkSize": 300, "chunkOverlap": 200}, "chunkOverlap"),
        ({**MEMO, "magic": [{"hex": "0g"}]}, "magic[0]"),
        ({**MEMO, "container": "no-such-type"}, "container"),
        ({**MEMO, "name": "Bad Name"}, "name"),
    ]
    for given, field in cases:
        body = await gql(CREATE, {"i": given}, token=admin_token)

        [error] = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", body
        assert error["extensions"]["field"] == field
    listed = await gql("{ documentTypes { system } }")
    assert all(t["system"] for t in listed["data"]["documentTypes"])


async def test_chunk_document_says_which_strategy_it_used(gql: GraphQLCall) -> None:
    query = """query($c: String!, $f: String) {
      chunkDocument(content: $c, filename: $f, size: 100) {
        strategyUsed detection { name } chunks { text heading }
      }
    }"""
    python = "def one():\n    return 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1\n\n\ndef two():\n    return 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 2\n"

    parsed = await gql(query, {"c": python, "f": "tool.py"})
    fallback = await gql(query, {"c": "fun main() = println(1)\n", "f": "Main.kt"})

    chunked = parsed["data"]["chunkDocument"]
    assert chunked["strategyUsed"] == "syntactic:python"
    assert [c["heading"] for c in chunked["chunks"]] == ["one", "two"]
    assert fallback["data"]["chunkDocument"]["strategyUsed"] == "code_fallback:kotlin"


async def test_a_note_knows_its_document_type_from_its_format(gql: GraphQLCall) -> None:
    fields = "documentType { name confidence method }"
    made = await gql(
        f"mutation($i: CreateNoteInput!) {{ createNote(input: $i) {{ id {fields} }} }}",
        {"i": {"title": "Query", "content": "SELECT 1;", "format": "sql"}},
    )
    plain = await gql(
        f"mutation($i: CreateNoteInput!) {{ createNote(input: $i) {{ {fields} }} }}",
        {"i": {"title": "Plain", "content": "# Title\n\nText."}},
    )

    assert made["data"]["createNote"]["documentType"] == {
        "name": "sql", "confidence": 0.95, "method": "FORMAT",
    }  # fmt: skip
    assert plain["data"]["createNote"]["documentType"]["name"] == "markdown"
