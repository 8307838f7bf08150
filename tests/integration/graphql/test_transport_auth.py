"""Authentication at the HTTP transport: 401 + WWW-Authenticate, nothing leaks."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import httpx
import jwt
import pytest
import redis.asyncio as redis
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.settings import Settings
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

ME = "{ me { sub groups roles permissions } }"


async def test_missing_token_is_401_with_www_authenticate(client: httpx.AsyncClient) -> None:
    response = await client.post("/graphql", json={"query": ME})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert error_codes(response.json()) == ["UNAUTHENTICATED"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-jwt",
        "Bearer a.b",
        "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        "Basic dXNlcjpwYXNz",
        "Bearer ",
        "Bearer " + "A" * 20000,
    ],
)
async def test_malformed_tokens_are_rejected_without_detail(
    client: httpx.AsyncClient, header: str
) -> None:
    response = await client.post("/graphql", json={"query": ME}, headers={"Authorization": header})
    assert response.status_code == 401
    body = response.json()
    assert error_codes(body) == ["UNAUTHENTICATED"]
    # The caller learns that authentication failed, not why.
    assert body["errors"][0]["message"] == "A valid bearer token is required"


async def test_expired_token_is_rejected(
    client: httpx.AsyncClient, issuer: LocalIssuer, settings: Settings
) -> None:
    token = issuer.mint("alice", ttl=timedelta(seconds=1))
    claims = jwt.decode(token, options={"verify_signature": False})
    claims["exp"] = claims["iat"] - 3600
    claims["iat"] -= 7200
    claims["nbf"] = claims["iat"]
    forged = _resign(settings, issuer, claims)
    response = await client.post(
        "/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401


async def test_token_signed_by_another_key_is_rejected(
    client: httpx.AsyncClient, issuer: LocalIssuer
) -> None:
    claims = jwt.decode(
        issuer.mint("mallory", roles=["admin"]), options={"verify_signature": False}
    )
    other_key = ec.generate_private_key(ec.SECP256R1())
    forged = jwt.encode(claims, other_key, algorithm="ES256", headers={"kid": issuer.kid})
    response = await client.post(
        "/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401


def _resign(settings: Settings, issuer: LocalIssuer, claims: dict[str, object]) -> str:
    """Sign ``claims`` with the local issuer's own key (to vary only the claims)."""
    key = load_pem_private_key(
        (settings.home / "issuer" / "signing-key.pem").read_bytes(), password=None
    )
    headers = {"kid": issuer.kid, "typ": "at+jwt"}
    return jwt.encode(claims, key, algorithm="ES256", headers=headers)  # type: ignore[arg-type]


async def test_valid_token_becomes_the_principal(gql: GraphQLCall, issuer: LocalIssuer) -> None:
    token = issuer.mint(
        "charlie",
        groups=["platform-team", "devops-team"],
        roles=["viewer"],
        permissions=["memory:read"],
    )
    body = await gql(ME, token=token)
    assert body["data"]["me"] == {
        "sub": "charlie",
        "groups": ["devops-team", "platform-team"],
        "roles": ["viewer"],
        "permissions": ["memory:read"],
    }


async def test_graphiql_is_served_on_get_but_queries_over_get_are_refused(
    client: httpx.AsyncClient, admin_token: str
) -> None:
    page = await client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql" in page.text.lower()
    response = await client.get(
        "/graphql",
        params={"query": ME},
        headers={"Authorization": f"Bearer {admin_token}", "Accept": "application/json"},
    )
    assert response.status_code in (400, 405)
    assert "data" not in response.text


async def test_batched_operations_are_refused(client: httpx.AsyncClient, admin_token: str) -> None:
    response = await client.post(
        "/graphql",
        json=[{"query": ME}, {"query": ME}],
        headers={"Authorization": f"Bearer {admin_token}"},
    )
    assert response.status_code == 400


async def test_health_and_readiness_probes(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"postgres": "ok", "redis": "ok"}


async def test_local_issuer_publishes_discovery_and_jwks(
    client: httpx.AsyncClient, issuer: LocalIssuer
) -> None:
    discovery = (await client.get("/.well-known/openid-configuration")).json()
    assert discovery["issuer"] == issuer.issuer
    jwks = (await client.get("/.well-known/jwks.json")).json()
    assert [key["kid"] for key in jwks["keys"]] == [issuer.kid]
    assert all("d" not in key for key in jwks["keys"])  # public halves only


async def test_readiness_reports_an_unreachable_redis_as_503(runtime: Runtime) -> None:
    broken = dataclasses.replace(runtime, redis=redis.Redis.from_url("unix:///nonexistent.sock"))
    transport = httpx.ASGITransport(app=create_app(broken))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as c:
            response = await c.get("/readyz")
    finally:
        await broken.redis.aclose()
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["postgres"] == "ok"
    assert checks["redis"].startswith("unavailable")
