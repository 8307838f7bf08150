"""One delivery attempt against a real receiver on 127.0.0.1 (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from fortemi.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, signature_headers, verify
from fortemi.webhooks.targets import TargetPolicy
from fortemi.webhooks.transport import DeliveryResult, deliver, new_client

from .conftest import Certificate, Receiver

# localhost may resolve to ::1 as well as 127.0.0.1, depending on the machine.
LOOPBACK = TargetPolicy.from_cidrs(["127.0.0.0/8", "::1/128"])
SECRET = b"whsec-integration"
BODY = json.dumps({"type": "note.created", "id": "evt_1"}).encode()


async def post(
    client: httpx.AsyncClient,
    url: str,
    *,
    policy: TargetPolicy = LOOPBACK,
    timeout_seconds: float = 5,
    max_redirects: int = 3,
    headers: dict[str, str] | None = None,
) -> DeliveryResult:
    return await deliver(
        client,
        url,
        BODY,
        headers or {},
        policy=policy,
        timeout_seconds=timeout_seconds,
        max_redirects=max_redirects,
    )


def http_url(receiver: Receiver, path: str, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{receiver.http_port}{path}"


def https_url(receiver: Receiver, path: str, host: str = "localhost") -> str:
    return f"https://{host}:{receiver.tls_port}{path}"


# --- what arrives ------------------------------------------------------------------------


async def test_signed_delivery_arrives_and_the_receiver_verifies_it(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    sent_at = int(time.time())
    result = await post(
        client, http_url(receiver, "/ok"), headers=signature_headers(SECRET, sent_at, BODY)
    )

    assert result.outcome == "delivered"
    assert (result.status_code, result.failure_class, result.code) == (200, None, None)
    assert result.response_excerpt == "accepted"
    assert result.final_url == http_url(receiver, "/ok")
    [seen] = receiver.requests
    assert (seen.method, seen.path, seen.body) == ("POST", "/ok", BODY)
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["user-agent"] == "Fortemi-Webhooks/1"
    assert verify(
        SECRET,
        timestamp=seen.headers[TIMESTAMP_HEADER.lower()],
        signature=seen.headers[SIGNATURE_HEADER.lower()],
        body=seen.body,
        now=sent_at,
    )


async def test_caller_headers_win_except_framing_and_connection(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    given = {
        "Content-Type": "application/cloudevents+json",
        "User-Agent": "Custom/2",
        "Content-Length": "1",
        "Connection": "keep-alive",
        "Cookie": "smuggled=1",
    }
    result = await post(client, http_url(receiver, "/ok"), headers=given)

    assert result.outcome == "delivered"
    [seen] = receiver.requests
    assert seen.body == BODY
    assert seen.headers["content-type"] == "application/cloudevents+json"
    assert seen.headers["user-agent"] == "Custom/2"
    assert seen.headers["content-length"] == str(len(BODY))
    assert seen.headers["connection"] == "close"
    assert seen.headers["accept-encoding"] == "identity"
    assert "cookie" not in seen.headers


async def test_host_header_is_the_urls_name_while_the_checked_address_is_dialled(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    url = http_url(receiver, "/ok", host="localhost")
    result = await post(client, url)

    assert result.outcome == "delivered"
    assert result.final_url == url
    [seen] = receiver.requests
    assert seen.headers["host"] == f"localhost:{receiver.http_port}"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.1"])
async def test_loopback_is_refused_by_default_before_any_connection(
    client: httpx.AsyncClient, receiver: Receiver, host: str
) -> None:
    result = await post(client, http_url(receiver, "/ok", host=host), policy=TargetPolicy())

    assert (result.outcome, result.failure_class, result.code) == (
        "failed",
        "permanent",
        "webhook_target_private",
    )
    assert result.status_code is None
    assert receiver.requests == []


async def test_loopback_is_reached_when_the_policy_allows_it(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    policy = TargetPolicy.from_cidrs(["127.0.0.0/8"])
    result = await post(client, http_url(receiver, "/ok"), policy=policy)

    assert result.outcome == "delivered"
    assert len(receiver.requests) == 1


async def test_cookies_set_by_one_receiver_are_never_sent_again(receiver: Receiver) -> None:
    # A plain client keeps a cookie jar: deliver() must strip what it would send.
    async with httpx.AsyncClient(trust_env=False) as plain:
        await post(plain, http_url(receiver, "/cookie"))
        await post(plain, http_url(receiver, "/ok"))
    async with new_client() as built:
        await post(built, http_url(receiver, "/cookie"))
        assert not built.cookies  # and new_client() never stores them at all
        await post(built, http_url(receiver, "/ok"))

    assert [r.path for r in receiver.requests] == ["/cookie", "/ok", "/cookie", "/ok"]
    assert all("cookie" not in r.headers for r in receiver.requests)


async def test_response_excerpt_is_the_first_256_characters(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, http_url(receiver, "/big"))

    assert result.outcome == "delivered"
    assert result.response_excerpt == "é" * 256


# --- classification ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outcome", "failure_class", "retry_after"),
    [
        (200, "delivered", None, None),
        (202, "delivered", None, None),
        (204, "delivered", None, None),
        (429, "retry", "rate_limited", 30.0),
        (503, "retry", "transient", 7.0),
        (500, "retry", "transient", None),
        (502, "retry", "transient", None),
        (504, "retry", "transient", None),
        (408, "retry", "transient", None),
        (425, "retry", "transient", None),
        (400, "failed", "permanent", None),
        (401, "failed", "permanent", None),
        (404, "failed", "permanent", None),
        (410, "failed", "permanent", None),
        (422, "failed", "permanent", None),
    ],
)
async def test_status_codes_are_classified(
    client: httpx.AsyncClient,
    receiver: Receiver,
    status: int,
    outcome: str,
    failure_class: str | None,
    retry_after: float | None,
) -> None:
    result = await post(client, http_url(receiver, f"/status/{status}"))

    assert result.outcome == outcome
    assert result.failure_class == failure_class
    assert result.status_code == status
    assert result.code == (None if outcome == "delivered" else f"http_{status}")
    assert result.retry_after_seconds == retry_after
    if status != 204:
        assert result.response_excerpt == f"status {status}"


async def test_a_receiver_that_never_answers_times_out_as_a_retry(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, http_url(receiver, "/slow"), timeout_seconds=0.5)

    assert (result.outcome, result.failure_class, result.code) == ("retry", "timeout", "timeout")
    assert result.status_code is None
    assert [r.path for r in receiver.requests] == ["/slow"]


@pytest.fixture
async def refusing_port() -> AsyncIterator[int]:
    """A loopback port nothing listens on (bound, never listening, so never reused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_a_refused_connection_is_a_transient_connect_error(
    client: httpx.AsyncClient, refusing_port: int
) -> None:
    result = await post(client, f"http://127.0.0.1:{refusing_port}/")

    assert (result.outcome, result.failure_class, result.code) == (
        "retry",
        "transient",
        "connect_error",
    )


@pytest.fixture
async def hanging_up_port() -> AsyncIterator[int]:
    """A loopback server that reads the request and closes without a response."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_a_connection_dropped_before_the_response_is_a_transient_network_error(
    client: httpx.AsyncClient, hanging_up_port: int
) -> None:
    result = await post(client, f"http://127.0.0.1:{hanging_up_port}/")

    assert (result.outcome, result.failure_class, result.code) == (
        "retry",
        "transient",
        "network_error",
    )


async def test_an_unresolvable_name_is_a_transient_retry(client: httpx.AsyncClient) -> None:
    result = await post(client, "http://no-such-host.invalid/hook")

    assert (result.outcome, result.failure_class, result.code) == (
        "retry",
        "transient",
        "webhook_target_unresolvable",
    )


async def test_a_url_check_url_rejects_fails_permanently_with_its_reason(
    client: httpx.AsyncClient,
) -> None:
    result = await post(client, "ftp://example.com/hook")

    assert (result.outcome, result.failure_class, result.code) == (
        "failed",
        "permanent",
        "webhook_url_scheme",
    )


# --- redirects -----------------------------------------------------------------------------


async def test_a_same_origin_redirect_is_followed_re_posting_body_and_signature(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    signed = signature_headers(SECRET, int(time.time()), BODY)
    result = await post(client, http_url(receiver, "/redirect/same"), headers=signed)

    assert result.outcome == "delivered"
    assert result.final_url == http_url(receiver, "/ok")
    first, second = receiver.requests
    assert (first.path, second.path) == ("/redirect/same", "/ok")
    assert second.method == "POST"
    assert second.body == BODY
    assert second.headers[SIGNATURE_HEADER.lower()] == signed[SIGNATURE_HEADER]


async def test_redirects_up_to_the_limit_are_followed(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, http_url(receiver, "/redirect/chain/3"), max_redirects=3)

    assert result.outcome == "delivered"
    assert result.response_excerpt == "end of chain"
    assert len(receiver.requests) == 4


@pytest.mark.parametrize("path", ["/redirect/chain/4", "/redirect/loop"])
async def test_one_redirect_too_many_fails_permanently(
    client: httpx.AsyncClient, receiver: Receiver, path: str
) -> None:
    result = await post(client, http_url(receiver, path), max_redirects=3)

    assert (result.outcome, result.failure_class, result.code) == (
        "failed",
        "permanent",
        "too_many_redirects",
    )
    assert len(receiver.requests) == 4  # the first request and three redirects, no more


@pytest.mark.parametrize(
    ("url_host", "path"),
    [
        ("127.0.0.1", "/redirect/other-ip"),
        ("127.0.0.1", "/redirect/localhost"),  # same address, but another host name
        ("127.0.0.1", "/redirect/upgrade"),  # https, but to another host name
        ("localhost", "/redirect/ftp"),
    ],
)
async def test_a_redirect_anywhere_else_is_refused_without_following_it(
    client: httpx.AsyncClient, receiver: Receiver, url_host: str, path: str
) -> None:
    result = await post(client, http_url(receiver, path, host=url_host))

    assert (result.outcome, result.failure_class, result.code) == (
        "failed",
        "permanent",
        "redirect_refused",
    )
    assert result.status_code == 307
    assert [r.path for r in receiver.requests] == [path]


async def test_a_redirect_without_a_location_fails_permanently(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, http_url(receiver, "/redirect/nowhere"))

    assert (result.outcome, result.failure_class, result.code) == (
        "failed",
        "permanent",
        "http_302",
    )


async def test_an_http_to_https_upgrade_on_the_same_host_is_followed(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, http_url(receiver, "/redirect/upgrade", host="localhost"))

    assert result.outcome == "delivered"
    assert result.final_url == https_url(receiver, "/ok")
    first, second = receiver.requests
    assert (first.tls, second.tls) == (False, True)
    assert second.body == BODY


async def test_an_https_to_http_downgrade_is_refused(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, https_url(receiver, "/redirect/downgrade"))

    assert (result.outcome, result.code) == ("failed", "redirect_refused")
    assert [r.path for r in receiver.requests] == ["/redirect/downgrade"]


# --- TLS through the pinned address --------------------------------------------------------


async def test_tls_to_the_certificates_name_verifies_while_dialling_the_checked_address(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    # The request goes to 127.0.0.1; it only verifies if SNI and the hostname check use
    # "localhost", the one name the certificate carries.
    result = await post(client, https_url(receiver, "/ok"))

    assert result.outcome == "delivered"
    assert result.response_excerpt == "accepted"
    [seen] = receiver.requests
    assert seen.tls
    assert seen.headers["host"] == f"localhost:{receiver.tls_port}"


async def test_tls_to_an_address_the_certificate_does_not_name_fails_verification(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    result = await post(client, https_url(receiver, "/ok", host="127.0.0.1"))

    # A certificate problem is retried: the receiver's operator can fix it in time.
    assert (result.outcome, result.failure_class, result.code) == (
        "retry",
        "transient",
        "tls_error",
    )
    assert receiver.requests == []


async def test_tls_to_an_untrusted_certificate_fails_verification(receiver: Receiver) -> None:
    async with new_client() as default_trust:
        result = await post(default_trust, https_url(receiver, "/ok"))

    assert (result.outcome, result.code) == ("retry", "tls_error")
    assert receiver.requests == []


async def test_a_connection_verified_for_one_name_never_carries_another(
    receiver: Receiver, certificate: Certificate
) -> None:
    # httpcore pools by origin, and both deliveries dial https://127.0.0.1:<port>. Even a
    # client that keeps connections alive must not reuse the one verified for "localhost"
    # for a request whose certificate check (for "127.0.0.1") would fail.
    trust = ssl.create_default_context(cadata=certificate.pem)
    async with httpx.AsyncClient(verify=trust, trust_env=False) as keep_alive:
        first = await post(keep_alive, https_url(receiver, "/ok"))
        second = await post(keep_alive, https_url(receiver, "/ok", host="127.0.0.1"))

    assert first.outcome == "delivered"
    assert (second.outcome, second.code) == ("retry", "tls_error")
    assert len(receiver.requests) == 1


# --- DNS: resolved once per hop, every answer checked, the checked address dialled ---------


class ScriptedResolver:
    """Stands in for the loop's getaddrinfo: answers each lookup from a script, counting."""

    def __init__(self, *answers: tuple[str, ...]) -> None:
        self.answers = list(answers)
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int, **_: object) -> list[Any]:
        self.lookups.append(host)
        addresses = self.answers[min(len(self.lookups), len(self.answers)) - 1]
        return [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))
            for address in addresses
        ]


async def test_the_name_is_resolved_once_and_the_checked_address_is_dialled(
    client: httpx.AsyncClient, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rebinding resolver: any second lookup would answer an address nothing listens on.
    resolver = ScriptedResolver(("127.0.0.1",), ("127.0.0.2",))
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolver)
    result = await post(client, f"http://hooks.test:{receiver.http_port}/ok")

    assert result.outcome == "delivered"
    assert resolver.lookups == ["hooks.test"]
    [seen] = receiver.requests
    assert seen.headers["host"] == f"hooks.test:{receiver.http_port}"


async def test_each_redirect_hop_is_resolved_and_checked_again(
    client: httpx.AsyncClient, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = ScriptedResolver(("127.0.0.1",), ("10.0.0.1",))
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolver)
    policy = TargetPolicy.from_cidrs(["127.0.0.0/8"])
    result = await post(
        client, f"http://hooks.test:{receiver.http_port}/redirect/same", policy=policy
    )

    assert (result.outcome, result.code) == ("failed", "webhook_target_private")
    assert resolver.lookups == ["hooks.test", "hooks.test"]
    assert [r.path for r in receiver.requests] == ["/redirect/same"]


async def test_an_address_that_refuses_is_skipped_for_the_next_one(
    client: httpx.AsyncClient, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The receiver listens on 127.0.0.1 only; 127.0.0.2 and 127.0.0.3 refuse connections.
    resolver = ScriptedResolver(("127.0.0.2", "127.0.0.1", "127.0.0.3"))
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolver)
    result = await post(client, f"http://hooks.test:{receiver.http_port}/ok")

    assert result.outcome == "delivered"
    assert len(receiver.requests) == 1
