"""``fortemi pke publish KEY.pub``: a public key file sent to a server's key directory
(the ``publishPublicKey`` mutation), so ``encryptFor`` can name its address there.

Like ``fortemi attach``, it talks to the server at ``FORTEMI_URL`` (default: this
installation's own) with the bearer token in ``FORTEMI_TOKEN``; the published key is owned
by that token's principal. Only the public key file travels; it is checked locally first,
so a private key file given by mistake never leaves the machine.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from fortemi.crypto.keys import parse_public_key
from fortemi.platform.api_client import ApiClient

__all__ = ["PUBLISH", "publish", "run_publish"]

PUBLISH = """mutation($k: String!, $l: String) {
  publishPublicKey(keyFile: $k, label: $l) { address label } }"""


def publish(
    url: str, token: str | None, key_file: str, label: str | None, *, timeout: float = 60
) -> dict[str, Any]:
    """Publish ``key_file`` (a ``.pub`` file's text); the key's address and label.

    Raises :class:`~fortemi.platform.errors.Unavailable` when the server cannot be
    reached, :class:`~fortemi.platform.errors.FortemiError` with the server's message and
    code when it refuses."""
    client = ApiClient(url, token, None, timeout=timeout)
    try:
        published: dict[str, Any] = client.request(
            PUBLISH, {"k": key_file, "l": label}, "publishPublicKey"
        )
    finally:
        client.close()
    return published


def run_publish(args: argparse.Namespace) -> int:
    from fortemi.platform.settings import Settings

    text = args.file.read_text(encoding="utf-8")
    parse_public_key(text.encode("utf-8"))  # refused here (InvalidKeyFile) if not a .pub
    url = os.environ.get("FORTEMI_URL") or Settings().base_url
    published = publish(url, os.environ.get("FORTEMI_TOKEN"), text, args.label)
    print(published["address"])
    return 0
