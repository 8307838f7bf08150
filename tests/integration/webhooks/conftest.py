"""A real webhook receiver: one ASGI app served by uvicorn over http and https on 127.0.0.1.

It records every request it is sent and answers by path, so tests can prove what reached
the wire (or that nothing did). The https listener presents a self-signed certificate
for the DNS name ``localhost`` only; ``trusting_client`` trusts exactly that certificate.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.types import Receive, Scope, Send

from fortemi.webhooks.transport import new_client

Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    tls: bool


@dataclass
class Receiver:
    """The ASGI app; ``requests`` is everything it has been sent, in order."""

    http_port: int = 0
    tls_port: int = 0
    requests: list[Recorded] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(
            Recorded(
                method=scope["method"],
                path=scope["path"],
                headers={k.decode().lower(): v.decode() for k, v in scope["headers"]},
                body=bytes(body),
                tls=scope["scheme"] == "https",
            )
        )
        await self._answer(scope["path"], receive, send)

    async def _answer(self, path: str, receive: Receive, send: Send) -> None:
        if path == "/slow":
            # Never answer; return once the client has given up and hung up.
            async with asyncio.timeout(10):
                while (await receive())["type"] != "http.disconnect":
                    pass
            return
        status, headers, body = self._reply(path)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _reply(self, path: str) -> tuple[int, Headers, bytes]:
        text = [(b"content-type", b"text/plain; charset=utf-8")]
        if path == "/ok":
            return 200, text, b"accepted"
        if path.startswith("/status/"):
            status = int(path.removeprefix("/status/"))
            wait = {429: b"30", 503: b"7"}.get(status)
            extra = [(b"retry-after", wait)] if wait else []
            return status, text + extra, f"status {status}".encode()
        if path == "/big":
            return 200, text, "é".encode() * 100_000
        if path == "/cookie":
            return 200, [*text, (b"set-cookie", b"session=planted; Path=/")], b"ok"
        if path.startswith("/redirect/chain/"):
            left = int(path.removeprefix("/redirect/chain/"))
            if left == 0:
                return 200, text, b"end of chain"
            return 302, [(b"location", f"/redirect/chain/{left - 1}".encode())], b""
        locations = {
            "/redirect/same": "/ok",
            "/redirect/loop": "/redirect/loop",
            "/redirect/other-ip": f"http://127.0.0.2:{self.http_port}/ok",
            "/redirect/localhost": f"http://localhost:{self.http_port}/ok",
            "/redirect/upgrade": f"https://localhost:{self.tls_port}/ok",
            "/redirect/downgrade": f"http://localhost:{self.http_port}/ok",
            "/redirect/ftp": "ftp://localhost/ok",
        }
        if path in locations:
            return 307, [(b"location", locations[path].encode())], b""
        if path == "/redirect/nowhere":
            return 302, text, b"no location"
        return 404, text, b"no such path"


@dataclass(frozen=True)
class Certificate:
    cert_file: Path
    key_file: Path
    pem: str


def _self_signed_for_localhost(directory: Path) -> Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Certificate(cert_file, key_file, pem.decode())


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return _self_signed_for_localhost(tmp_path_factory.mktemp("webhook-tls"))


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def _serving(config: uvicorn.Config, sock: socket.socket) -> AsyncIterator[None]:
    server = uvicorn.Server(config)
    # pytest owns SIGINT; uvicorn must not capture it while the receiver runs.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture(scope="module")
async def serving_receiver(certificate: Certificate) -> AsyncIterator[Receiver]:
    plain, secure = _listening_socket(), _listening_socket()
    app = Receiver(http_port=plain.getsockname()[1], tls_port=secure.getsockname()[1])
    async with _serving(_config(app), plain), _serving(_config(app, certificate), secure):
        yield app


def _config(app: Receiver, certificate: Certificate | None = None) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        ws="none",
        ssl_certfile=certificate.cert_file if certificate else None,
        ssl_keyfile=certificate.key_file if certificate else None,
    )


@pytest.fixture
def receiver(serving_receiver: Receiver) -> Receiver:
    """The running receiver, with nothing recorded yet."""
    serving_receiver.requests.clear()
    return serving_receiver


@pytest.fixture
async def client(certificate: Certificate) -> AsyncIterator[httpx.AsyncClient]:
    """A delivery client that trusts the receiver's certificate (and nothing else)."""
    trust = ssl.create_default_context(cadata=certificate.pem)
    async with new_client(verify=trust) as built:
        yield built
