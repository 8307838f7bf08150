"""Auditors query the decision log through GraphQL; everyone else is refused, and asking is audited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from tests.integration.graphql.conftest import GraphQLCall, error_codes

LOG = """query($f: AuditFilter, $first: Int) {
  auditLog(filter: $f, first: $first) {
    edges { node { userId groups resourceType resourceName memory action decision reason
                   policyVersion traceId chainHash } }
    pageInfo { hasNextPage endCursor }
  }
}"""


@pytest.fixture(scope="module")
def tokens(issuer: LocalIssuer) -> dict[str, str]:
    return {
        "auditor": issuer.mint("ivy-auditor", roles=["auditor"]),
        "reader": issuer.mint("ron-reader", permissions=["audit:read"]),
        "admin": issuer.mint("ada-admin", roles=["admin"]),
        "outsider": issuer.mint("olga-outsider", groups=["data-team"], roles=["viewer"]),
    }


def _nodes(body: dict[str, Any]) -> list[dict[str, Any]]:
    assert "errors" not in body, body
    return [edge["node"] for edge in body["data"]["auditLog"]["edges"]]


@pytest.mark.parametrize("who", ["auditor", "reader"])
async def test_auditors_by_role_or_permission_read_the_log(
    gql: GraphQLCall, tokens: dict[str, str], who: str
) -> None:
    body = await gql(LOG, {"first": 5}, token=tokens[who])
    assert len(_nodes(body)) >= 1


async def test_admin_alone_is_not_an_auditor(gql: GraphQLCall, tokens: dict[str, str]) -> None:
    body = await gql(LOG, {"first": 5}, token=tokens["admin"])
    assert error_codes(body) == ["FORBIDDEN"]
    assert body["errors"][0]["extensions"]["reason"] == "not_in_owner_group"


async def test_a_denied_request_is_recorded_with_who_what_why_and_the_trace_id(
    gql: GraphQLCall, tokens: dict[str, str]
) -> None:
    denied = await gql(
        'query { notes(filter: {project: "poimen"}) { totalCount } }', token=tokens["outsider"]
    )
    assert error_codes(denied) == ["FORBIDDEN"]
    body = await gql(
        LOG,
        {"f": {"userId": "olga-outsider", "decision": "deny", "resourceName": "poimen"}},
        token=tokens["auditor"],
    )
    (entry,) = _nodes(body)[:1]
    assert entry["groups"] == ["data-team"]
    assert (entry["resourceType"], entry["action"], entry["reason"]) == (
        "project",
        "read",
        "not_in_allowed_groups",
    )
    assert entry["traceId"]
    assert len(entry["chainHash"]) == 64


async def test_querying_the_audit_log_is_itself_audited(
    gql: GraphQLCall, tokens: dict[str, str]
) -> None:
    await gql(LOG, {"first": 1}, token=tokens["reader"])
    body = await gql(
        LOG, {"f": {"userId": "ron-reader", "resourceType": "audit"}}, token=tokens["auditor"]
    )
    assert any(e["decision"] == "allow" and e["action"] == "read" for e in _nodes(body))


async def test_the_three_auditor_questions(gql: GraphQLCall, tokens: dict[str, str]) -> None:
    await gql(
        'query { notes(filter: {project: "poimen"}) { totalCount } }', token=tokens["outsider"]
    )
    week_ago = (datetime.now(UTC) - timedelta(days=7)).isoformat()
    # 1. The access log of the last seven days.
    recent = await gql(LOG, {"f": {"since": week_ago}, "first": 50}, token=tokens["auditor"])
    assert any(e["userId"] == "olga-outsider" and e["decision"] == "deny" for e in _nodes(recent))
    # 2. Who accessed what.
    who_what = await gql(
        """query($f: AuditFilter) { auditStats(filter: $f, bucket: DAY, groupBy: [USER, RESOURCE])
             { start userId resourceType resourceName count } }""",
        {"f": {"since": week_ago, "decision": "allow"}},
        token=tokens["auditor"],
    )
    rows = who_what["data"]["auditStats"]
    assert any(r["userId"] == "ivy-auditor" and r["resourceType"] == "audit" for r in rows)
    # 3. Denied attempts, by user and reason.
    denied = await gql(
        """query($f: AuditFilter) { auditStats(filter: $f, bucket: HOUR, groupBy: [USER, REASON])
             { userId reason count } }""",
        {"f": {"since": week_ago, "decision": "deny"}},
        token=tokens["auditor"],
    )
    assert any(
        r["userId"] == "olga-outsider"
        and r["reason"] == "not_in_allowed_groups"
        and r["count"] >= 1
        for r in denied["data"]["auditStats"]
    )


async def test_audit_verify_reports_intact_chains(gql: GraphQLCall, tokens: dict[str, str]) -> None:
    body = await gql(
        "{ auditVerify { ok checked firstBrokenId problem } }", token=tokens["auditor"]
    )
    result = body["data"]["auditVerify"]
    assert result["ok"] is True, result
    assert result["checked"] > 0
    assert result["firstBrokenId"] is None


async def test_policies_show_sources_and_need_the_admin_role(
    gql: GraphQLCall, tokens: dict[str, str], memory: str
) -> None:
    refused = await gql("{ policies { version } }", token=tokens["auditor"])
    assert error_codes(refused) == ["FORBIDDEN"]
    body = await gql(
        "{ policies { version defaultDecision roles errors { file } "
        "policies { resourceType name memory source } } }",
        token=tokens["admin"],
    )
    status = body["data"]["policies"]
    assert status["defaultDecision"] == "deny"
    assert status["roles"] == ["viewer", "editor", "admin"]
    sources = {(p["resourceType"], p["name"], p["memory"]): p["source"] for p in status["policies"]}
    assert sources[("project", "poimen", None)].startswith("file:")
    assert sources[("memory", memory, memory)] == "database"
