"""Fortemi's own GraphQL API over HTTP, as the command-line tools reach a server
(``fortemi vault``, ``ask``, ``attach``, ``import``, ``pke publish``).

One place turns what can go wrong into the errors a command prints as one line: a server
that cannot be reached or does not answer GraphQL is :class:`Unavailable`; a GraphQL error
is :class:`FortemiError` with the server's message and code, and how to get a
token when the server says the caller is not authenticated.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from fortemi.platform.errors import FortemiError, Unavailable

__all__ = ["ApiClient"]


class ApiClient:
    """Operations POSTed to ``url``/graphql with the bearer token and memory headers."""

    def __init__(
        self, url: str, token: str | None, memory: str | None, *, timeout: float = 120
    ) -> None:
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if memory:
            headers["X-Fortemi-Memory"] = memory
        self.url = url.rstrip("/") + "/graphql"
        self._http = httpx.Client(headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def request(self, query: str, variables: dict[str, Any], field: str) -> Any:
        """``field`` of the data ``query`` answers."""
        body = {"query": query, "variables": variables}
        return self._answer(lambda: self._http.post(self.url, json=body), field)

    def upload(self, query: str, variables: dict[str, Any], path: Path, field: str) -> Any:
        """``query`` with ``path`` as its ``$file`` (the GraphQL multipart request spec);
        httpx reads the file in chunks as it sends it."""
        operations = {"query": query, "variables": {**variables, "file": None}}
        form = {"operations": json.dumps(operations), "map": json.dumps({"0": ["variables.file"]})}

        def send() -> httpx.Response:
            with path.open("rb") as handle:
                return self._http.post(self.url, data=form, files={"0": (path.name, handle)})

        return self._answer(send, field)

    def _answer(self, send: Callable[[], httpx.Response], field: str) -> Any:
        try:
            response = send()
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach {self.url}: {exc} (set FORTEMI_URL)") from exc
        try:
            body = response.json()
        except json.JSONDecodeError:
            raise Unavailable(
                f"{self.url} answered HTTP {response.status_code}, not GraphQL"
            ) from None
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors:
            first = errors[0]
            code = (first.get("extensions") or {}).get("code")
            message = f"{first.get('message')} ({code})" if code else str(first.get("message"))
            if code == "UNAUTHENTICATED" or response.status_code == httpx.codes.UNAUTHORIZED:
                message += "; set FORTEMI_TOKEN (`fortemi token` mints one)"
            raise FortemiError(message)
        return body["data"][field]
