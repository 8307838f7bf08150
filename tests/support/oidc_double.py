"""An OIDC identity provider double: it stands in for Authentik, which cannot run here.

It speaks the real protocol over a real socket: a Starlette app served by uvicorn on
127.0.0.1 (a free port) in a background thread. Its shapes are Authentik's: a
per-application issuer ``http://127.0.0.1:<port>/application/o/<slug>/`` (trailing slash
included), discovery at ``<issuer>.well-known/openid-configuration``, keys at
``<issuer>jwks/``, RS256 keys by default, access tokens with ``azp``, ``uid`` and a
``groups`` claim of group names, ID tokens with ``nonce`` and ``at_hash``.

Tests rotate keys, mint tokens, break endpoints (``discovery_override``, ``jwks_reply``,
``extra_jwks_entries``) and read request counts by path (``hits``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["OidcProviderDouble", "SigningKey", "b64url", "compact"]

# "EC" is P-256 (ES256), "EC-P521" is P-521 (ES512).
KeyKind = Literal["RSA", "EC", "EC-P521"]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    private_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

    @classmethod
    def generate(cls, kind: KeyKind = "RSA") -> SigningKey:
        kid = uuid.uuid4().hex
        if kind == "RSA":
            return cls(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))
        if kind == "EC-P521":
            return cls(kid, "ES512", ec.generate_private_key(ec.SECP521R1()))
        return cls(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))

    def signature(self, data: bytes, alg: str) -> bytes:
        """``data`` signed with ``alg``, which need not be this key's own algorithm."""
        algorithm = jwt.get_algorithm_by_name(alg)
        return algorithm.sign(data, self.private_key)

    def public_jwk(self) -> dict[str, Any]:
        public = self.private_key.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            members = RSAAlgorithm.to_jwk(public, as_dict=True)
        else:
            members = ECAlgorithm.to_jwk(public, as_dict=True)
        return {**members, "kid": self.kid, "alg": self.alg, "use": "sig"}


class _CountRequests:
    """Pure ASGI middleware counting every request by path, routed or not."""

    def __init__(self, app: ASGIApp, hits: Counter[str]) -> None:
        self._app = app
        self._hits = hits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self._hits[scope["path"]] += 1
        await self._app(scope, receive, send)


class OidcProviderDouble:
    """Authentik, as far as a resource server can tell. Use as a context manager."""

    def __init__(self, slug: str = "fortemi", client_id: str = "fortemi") -> None:
        self.slug = slug
        self.client_id = client_id
        self.hits: Counter[str] = Counter()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.reset()
        app = Starlette(
            routes=[
                Route(f"{self.path}.well-known/openid-configuration", self._discovery),
                Route(f"{self.path}jwks/", self._jwks),
            ]
        )
        config = uvicorn.Config(
            _CountRequests(app, self.hits),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http="h11",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> OidcProviderDouble:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                self._socket.close()
                raise RuntimeError("the OIDC provider double did not start")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join()
        self._socket.close()

    def reset(self) -> None:
        """Back to one fresh RS256 key, no faults, no counted requests."""
        self.signing_key = SigningKey.generate("RSA")
        self.published: list[SigningKey] = [self.signing_key]
        self.extra_jwks_entries: list[Any] = []
        self.discovery_override: dict[str, Any] | None = None
        self.jwks_reply: tuple[int, bytes] | None = None
        self.hits.clear()

    # -- what the provider publishes ---------------------------------------------------

    @property
    def path(self) -> str:
        return f"/application/o/{self.slug}/"

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}jwks/"

    @property
    def jwks_requests(self) -> int:
        return self.hits[f"{self.path}jwks/"]

    @property
    def discovery_requests(self) -> int:
        return self.hits[f"{self.path}.well-known/openid-configuration"]

    def rotate(self, kind: KeyKind = "RSA", *, keep_old: bool = True) -> SigningKey:
        """Sign with a new key from now on, publishing it (beside the old ones if kept)."""
        self.signing_key = SigningKey.generate(kind)
        self.published = [*self.published, self.signing_key] if keep_old else [self.signing_key]
        return self.signing_key

    def discovery_document(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"http://127.0.0.1:{self.port}/application/o/authorize/",
            "token_endpoint": f"http://127.0.0.1:{self.port}/application/o/token/",
            "jwks_uri": self.jwks_uri,
            "response_types_supported": ["code", "id_token", "id_token token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    async def _discovery(self, request: Request) -> Response:
        return JSONResponse(self.discovery_override or self.discovery_document())

    async def _jwks(self, request: Request) -> Response:
        if self.jwks_reply is not None:
            status, body = self.jwks_reply
            return Response(body, status_code=status, media_type="application/json")
        keys = [key.public_jwk() for key in self.published] + self.extra_jwks_entries
        return JSONResponse({"keys": keys})

    # -- tokens ------------------------------------------------------------------------

    def access_token(
        self,
        sub: str = "9c4b1e7f0d2a",
        *,
        groups: Iterable[str] = ("authentik Admins", "editors"),
        claims: Mapping[str, Any] | None = None,
        drop: Iterable[str] = (),
        headers: Mapping[str, Any] | None = None,
        key: SigningKey | None = None,
        now: float | None = None,
        ttl: int = 300,
    ) -> str:
        """An access token as Authentik mints it (header typ ``JWT``, azp, uid, groups);
        ``claims`` override claims, ``drop`` removes them, ``headers`` as for :meth:`sign`."""
        issued = int(time.time() if now is None else now)
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": self.client_id,
            "exp": issued + ttl,
            "iat": issued,
            "auth_time": issued,
            "acr": "goauthentik.io/providers/oauth2/default",
            "azp": self.client_id,
            "uid": uuid.uuid4().hex,
            "jti": uuid.uuid4().hex,
            "email": "ada@example.com",
            "email_verified": True,
            "name": "Ada Lovelace",
            "preferred_username": "ada",
            "groups": list(groups),
        }
        return self.sign(payload, claims=claims, drop=drop, headers=headers, key=key)

    def id_token(
        self,
        access_token: str,
        sub: str = "9c4b1e7f0d2a",
        *,
        nonce: str = "n-0S6_WzA2Mj",
        claims: Mapping[str, Any] | None = None,
        now: float | None = None,
    ) -> str:
        """An ID token issued with ``access_token``: aud is the client id (as ours)."""
        issued = int(time.time() if now is None else now)
        digest = hashlib.sha256(access_token.encode("ascii")).digest()
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": self.client_id,
            "exp": issued + 300,
            "iat": issued,
            "auth_time": issued,
            "nonce": nonce,
            "at_hash": b64url(digest[: len(digest) // 2]),
            "email": "ada@example.com",
            "groups": ["authentik Admins"],
        }
        return self.sign(payload, claims=claims)

    def sign(
        self,
        payload: Mapping[str, Any],
        *,
        claims: Mapping[str, Any] | None = None,
        drop: Iterable[str] = (),
        headers: Mapping[str, Any] | None = None,
        key: SigningKey | None = None,
    ) -> str:
        """``payload`` (with overrides) signed by ``key`` (default: the current one).

        ``headers`` override the header; a None value removes the entry (``kid``, say).
        """
        signer = key or self.signing_key
        body = {**payload, **(claims or {})}
        for name in drop:
            body.pop(name, None)
        header = {"alg": signer.alg, "kid": signer.kid, "typ": "JWT", **(headers or {})}
        header = {name: value for name, value in header.items() if value is not None}
        return compact(header, body, lambda data: signer.signature(data, header["alg"]))


def compact(
    header: Mapping[str, Any], payload: Mapping[str, Any], sign: Callable[[bytes], bytes]
) -> str:
    """A JWS in compact form, built by hand so tests can put anything in the header."""
    signing_input = f"{b64url(_json(header))}.{b64url(_json(payload))}"
    return f"{signing_input}.{b64url(sign(signing_input.encode('ascii')))}"


def _json(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
