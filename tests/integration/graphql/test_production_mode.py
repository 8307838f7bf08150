"""In production GraphiQL is not served and introspection is off."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import httpx
import pytest

from fortemi.app import create_app
from fortemi.platform.settings import Environment
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import error_codes


@pytest.fixture
async def production_client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    settings = runtime.settings.model_copy(update={"env": Environment.PRODUCTION})
    app = create_app(dataclasses.replace(runtime, settings=settings))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        yield client


async def test_production_serves_no_graphiql(production_client: httpx.AsyncClient) -> None:
    page = await production_client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code != 200
    assert "graphiql" not in page.text.lower()


async def test_production_refuses_introspection(
    production_client: httpx.AsyncClient, admin_token: str
) -> None:
    response = await production_client.post(
        "/graphql",
        json={"query": "{ __schema { queryType { name } } }"},
        headers={"Authorization": f"Bearer {admin_token}"},
    )
    body = response.json()
    assert body.get("data") is None
    assert set(error_codes(body)) == {"GRAPHQL_VALIDATION_FAILED"}
    plain = await production_client.post(
        "/graphql",
        json={"query": "{ me { sub } }"},
        headers={"Authorization": f"Bearer {admin_token}"},
    )
    assert plain.json() == {"data": {"me": {"sub": "root"}}}
