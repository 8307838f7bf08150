"""A 401 tells the client which check its token failed, and nothing more."""

from __future__ import annotations

import httpx

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.runtime import Runtime

ME = {"query": "{ me { sub } }"}


async def _refusal(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, object]:
    response = await client.post("/graphql", json=ME, headers=headers)
    assert response.status_code == 401
    [error] = response.json()["errors"]
    assert error["message"] == "A valid bearer token is required"
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    extensions: dict[str, object] = error["extensions"]
    return extensions


async def test_token_minted_for_another_port_is_refused_as_issuer_mismatch(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    settings = runtime.settings
    # The same data directory (so the same signing key), another port: `fortemi token` run
    # without the FORTEMI_PORT the server was started with.
    other_port = settings.model_copy(update={"port": settings.port + 1})
    issuer = LocalIssuer.load_or_create(settings.home, other_port.issuer, settings.oidc_audience)
    token = issuer.mint("alice")

    response = await client.post("/graphql", json=ME, headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 401
    [error] = response.json()["errors"]
    assert set(error["extensions"]) == {"code", "reason", "requestId"}
    assert error["extensions"]["reason"] == "issuer_mismatch"
    assert token not in response.text


async def test_missing_and_malformed_tokens_are_told_apart(client: httpx.AsyncClient) -> None:
    missing = await _refusal(client, {})
    malformed = await _refusal(client, {"Authorization": "Bearer not-a-jwt"})
    wrong_scheme = await _refusal(client, {"Authorization": "Basic YWxpY2U6c2VjcmV0"})

    assert [missing["reason"], malformed["reason"], wrong_scheme["reason"]] == [
        "missing",
        "malformed",
        "malformed",
    ]
