"""The GraphiQL page loads only files this server ships, each cacheable under its digest."""

from __future__ import annotations

import dataclasses
import re

import httpx

from fortemi.app import create_app
from fortemi.graphql.ide import ASSETS_PATH, GraphiQLPage
from fortemi.platform.settings import Environment
from fortemi.runtime import Runtime

_REFERENCE = re.compile(r'(?:src|href)="([^"]+)"')


async def _page(client: httpx.AsyncClient) -> httpx.Response:
    page = await client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200
    return page


async def test_graphiql_page_references_only_files_served_by_this_server(
    client: httpx.AsyncClient,
) -> None:
    page = await _page(client)
    # The favicon is an empty data: URL, so the browser asks for none.
    references = [ref for ref in _REFERENCE.findall(page.text) if ref != "data:,"]
    assert references, page.text
    # No CDN (unpkg, esm.sh, jsdelivr...): every script and style is a path on this origin.
    assert all(ref.startswith(f"{ASSETS_PATH}/") for ref in references), references
    assert {ref.rsplit("/", 1)[1] for ref in references} >= {
        "react.production.min.js",
        "react-dom.production.min.js",
        "graphiql.min.js",
        "graphiql.min.css",
    }
    for ref in references:
        asset = await client.get(ref)
        assert asset.status_code == 200, ref
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        kind = "text/javascript" if ref.endswith(".js") else "text/css"
        assert asset.headers["content-type"].startswith(kind)
        assert asset.content


async def test_graphiql_page_allows_no_inline_or_foreign_scripts(
    client: httpx.AsyncClient,
) -> None:
    page = await _page(client)
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in page.headers["content-security-policy"].split("; ")
    }
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'none'"]
    assert policy["connect-src"] == ["'self'"]
    # Every <script> has a src: nothing inline that the policy would have to allow.
    assert re.findall(r"<script(?![^>]*\ssrc=)", page.text) == []


async def test_graphiql_files_are_served_only_by_name_and_current_digest(
    client: httpx.AsyncClient,
) -> None:
    page = await _page(client)
    script = next(ref for ref in _REFERENCE.findall(page.text) if ref.endswith("graphiql.min.js"))
    digest = script.split("/")[-2]
    current = await client.get(script)
    assert current.status_code == 200
    stale = await client.get(f"{ASSETS_PATH}/0000000000000000/graphiql.min.js")
    unlisted = await client.get(f"{ASSETS_PATH}/{digest}/README.md")
    licence = await client.get(f"{ASSETS_PATH}/{digest}/LICENSE.graphiql")
    traversal = await client.get(f"{ASSETS_PATH}/{digest}/..%2F..%2Fide.py")
    assert [r.status_code for r in (stale, unlisted, licence, traversal)] == [404] * 4


async def test_production_serves_no_graphiql_files(runtime: Runtime) -> None:
    settings = runtime.settings.model_copy(update={"env": Environment.PRODUCTION})
    app = create_app(dataclasses.replace(runtime, settings=settings))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        page = await client.get("/graphql", headers={"Accept": "text/html"})
        development = GraphiQLPage()
        script = await client.get(development.url("graphiql.min.js"))
    assert page.status_code != 200
    assert script.status_code == 404
