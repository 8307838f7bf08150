"""GraphiQL in a real headless Chromium with no internet: the token field, then the docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.browser import Page, chromium

pytestmark = pytest.mark.live

_DOCS_BUTTON = "document.querySelector('[aria-label=\"Show Documentation Explorer\"]')"
_DOCS = "document.querySelector('.graphiql-doc-explorer')"
_STATUS = "document.getElementById('fortemi-token-status')"


async def _enter_token(page: Page, token: str) -> None:
    await page.evaluate("document.getElementById('fortemi-token-input').focus()")
    await page.insert_text(token)
    await page.evaluate("document.querySelector('#fortemi-token button[type=submit]').click()")


async def _query_fields_in_docs(page: Page) -> str:
    """Open the docs explorer, follow the Query root type, and return what it lists."""
    await page.wait_for(f"{_DOCS_BUTTON} !== null", "the docs explorer button")
    await page.evaluate(f"{_DOCS_BUTTON}.click()")
    await page.wait_for(
        f"{_DOCS} && [...{_DOCS}.querySelectorAll('a')].some(a => a.textContent === 'Query')",
        "the Query root type in the docs",
    )
    await page.evaluate(
        f"[...{_DOCS}.querySelectorAll('a')].find(a => a.textContent === 'Query').click()"
    )
    text: str = await page.wait_for(
        f"{_DOCS}.innerText.includes('Fields') && {_DOCS}.innerText", "the Query type's fields"
    )
    return text


async def test_graphiql_renders_the_schema_docs_offline_once_a_token_is_entered(
    live_server: str, user_token: str, tmp_path: Path
) -> None:
    origin = f"http://{live_server}"
    async with chromium(tmp_path) as page:
        await page.navigate(f"{origin}/graphql")
        await page.wait_for(f"{_STATUS}?.dataset.state === 'refused'", "the no-token notice")
        # Without a token, introspection is refused and the notice says why.
        assert "(missing)" in await page.evaluate(f"{_STATUS}.textContent")

        await _enter_token(page, user_token)
        await page.wait_for(f"{_STATUS}.dataset.state === 'accepted'", "the token accepted")
        fields = await _query_fields_in_docs(page)
        assert "notes" in fields
        assert "me" in fields

        # The token is remembered by this browser: a reload needs no second paste.
        await page.navigate(f"{origin}/graphql")
        await page.wait_for(f"{_STATUS}?.dataset.state === 'accepted'", "the kept token used")
        assert "notes" in await _query_fields_in_docs(page)

        requested = [
            event["params"]["request"]["url"]
            for event in page.events
            if event["method"] == "Network.requestWillBeSent"
        ]
        problems = [
            event["params"]["entry"]
            for event in page.events
            if event["method"] == "Log.entryAdded"
            and event["params"]["entry"]["level"] == "error"
            and "401" not in event["params"]["entry"]["text"]
        ]
    assert requested, "the browser reported no requests"
    # GraphiQL's fonts are data: URLs inside its CSS; every request is to this server.
    assert [url for url in requested if not url.startswith((origin, "data:"))] == []
    assert any(url.endswith("/graphiql.min.js") for url in requested)
    # No script or style blocked by the page's CSP, no failed load.
    assert problems == [], json.dumps(problems, indent=1)
