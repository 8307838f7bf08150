"""An S3 API double: moto's server speaking the S3 REST protocol on a loopback port, in a
thread of the test process (object storage cannot run here otherwise)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from moto.server import ThreadedMotoServer

__all__ = ["S3Double", "s3_double"]


@dataclass(frozen=True)
class S3Double:
    endpoint_url: str
    access_key_id: str = "double-access-key"
    secret_access_key: str = "double-secret-key"
    region: str = "us-east-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def s3_double() -> Iterator[S3Double]:
    """A running double, stopped (its thread joined) on exit."""
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield S3Double(f"http://127.0.0.1:{port}")
    finally:
        server.stop()
