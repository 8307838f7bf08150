"""``fortemi pke publish KEY.pub``: a public key file sent to a server's key directory
(the ``publishPublicKey`` mutation), so ``encryptFor`` can name its address there.

Like ``fortemi attach``, it talks to the server at ``FORTEMI_URL`` (default: this
installation's own) with the bearer token in ``FORTEMI_TOKEN``; the published key is owned
by that token's principal. Only the public key file travels; it is checked locally first,
so a private key file given by mistake never leaves the machine.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import httpx

from fortemi.crypto.keys import parse_public_key
from fortemi.platform.errors import FortemiError, Unavailable

__all__ = ["PUBLISH", "publish", "run_publish"]

PUBLISH = """mutation($k: String!, $l: String) {
  publishPublicKey(keyFile: $k, label: $l) { address label } }"""


def publish(
    url: str, token: str | None, key_file: str, label: str | None, *, timeout: float = 60
) -> dict[str, Any]:
    """Publish ``key_file`` (a ``.pub`` file's text); the key's address and label.

    Raises :class:`Unavailable` when the server cannot be reached, :class:`FortemiError`
    with the server's message and code when it refuses."""
    endpoint = url.rstrip("/") + "/graphql"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"query": PUBLISH, "variables": {"k": key_file, "l": label}}
    try:
        response = httpx.post(endpoint, json=body, headers=headers, timeout=timeout)
        answer = response.json()
    except httpx.HTTPError as exc:
        raise Unavailable(f"cannot reach {endpoint}: {exc} (set FORTEMI_URL)") from exc
    except json.JSONDecodeError:
        raise Unavailable(f"{endpoint} answered HTTP {response.status_code}") from None
    errors = answer.get("errors") if isinstance(answer, dict) else None
    if errors:
        first = errors[0]
        extensions = first.get("extensions") or {}
        detail = ", ".join(str(extensions[k]) for k in ("code", "reason") if extensions.get(k))
        message = str(first.get("message")) + (f" ({detail})" if detail else "")
        if extensions.get("code") == "UNAUTHENTICATED":
            message += "; set FORTEMI_TOKEN (`fortemi token` mints one)"
        raise FortemiError(message)
    published: dict[str, Any] = answer["data"]["publishPublicKey"]
    return published


def run_publish(args: argparse.Namespace) -> int:
    from fortemi.platform.settings import Settings

    text = args.file.read_text(encoding="utf-8")
    parse_public_key(text.encode("utf-8"))  # refused here (InvalidKeyFile) if not a .pub
    url = os.environ.get("FORTEMI_URL") or Settings().base_url
    published = publish(url, os.environ.get("FORTEMI_TOKEN"), text, args.label)
    print(published["address"])
    return 0
