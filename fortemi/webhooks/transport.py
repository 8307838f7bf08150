"""One webhook delivery attempt over HTTP, judged into a :class:`DeliveryResult`.

:func:`deliver` never raises for anything the target or the network does; it answers:

=====================================  ==========  ============  ===========================
what happened                          outcome     failure_class code
=====================================  ==========  ============  ===========================
2xx                                    delivered   --            --
429                                    retry       rate_limited  http_429 (+ Retry-After)
408, 425, 500-599                      retry       transient     http_<status> (503: +R-A)
other 1xx/3xx/4xx (410 included)       failed      permanent     http_<status>
redirect to the same origin, or        (followed, re-POSTing the same body, at most
http->https on the same host            ``max_redirects`` times, each hop re-checked)
redirect anywhere else                 failed      permanent     redirect_refused
more than ``max_redirects`` redirects  failed      permanent     too_many_redirects
the deadline passed                    retry       timeout       timeout
could not connect                      retry       transient     connect_error
TLS handshake/certificate failure      retry       transient     tls_error
connection broke mid-exchange          retry       transient     network_error
address not allowed (TargetRefused)    failed      permanent     webhook_target_private
name does not resolve                  retry       transient     webhook_target_unresolvable
URL rejected by check_url              failed      permanent     its reason (webhook_url_*)
=====================================  ==========  ============  ===========================

A TLS failure is a retry, not a failure: an expired or mismatched certificate is usually
fixed by the receiver's operator within the retry window, and retrying is harmless.

Why the request goes to an IP address. The name is resolved and checked once per hop
(:func:`~fortemi.webhooks.targets.resolve`) and the connection is made to the checked
address itself, so a second, different DNS answer (rebinding) cannot redirect it. The
URL's host is that address; the ``Host`` header carries the real name, and for https the
``sni_hostname`` request extension makes httpcore send the real name as TLS SNI and
verify the certificate against it (``AsyncHTTPConnection._connect`` passes it to
``start_tls`` as ``server_hostname``).

Why every request says ``Connection: close``. httpcore pools connections by origin, which
here is the IP address, not the name; a kept-alive connection whose certificate was
verified for one name could otherwise carry a later request for another name served at
the same address, unverified. One connection per request costs a handshake and removes
that case.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import email.utils
import http.cookiejar
import ssl
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Literal, cast
from urllib.parse import SplitResult, urljoin, urlunsplit

import httpx

from fortemi.platform.errors import BadUserInput
from fortemi.platform.jobs.models import FailureClass
from fortemi.platform.times import assume_utc
from fortemi.webhooks.targets import (
    Address,
    TargetPolicy,
    TargetRefused,
    TargetUnresolvable,
    check_url,
    resolve,
)

__all__ = ["DeliveryResult", "Outcome", "deliver", "new_client", "retry_after"]

Outcome = Literal["delivered", "retry", "failed"]

USER_AGENT = "Fortemi-Webhooks/1"
MAX_RETRY_AFTER_SECONDS = 3600.0
EXCERPT_CHARS = 256
# Enough bytes for 256 characters in any encoding; httpcore reads at most 64 KiB per
# network read, so no more than that is ever taken from the socket.
_EXCERPT_BYTES = 4 * EXCERPT_CHARS
_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TRANSIENT = frozenset({408, 425})
# The body is framed by us; a caller's value could contradict it.
_FRAMING_HEADERS = ("content-length", "transfer-encoding")


@dataclass(frozen=True)
class DeliveryResult:
    """What one attempt came to; ``final_url`` is the last URL requested (after redirects)."""

    outcome: Outcome
    status_code: int | None
    failure_class: FailureClass | None
    code: str | None
    retry_after_seconds: float | None
    duration_ms: float
    response_excerpt: str
    final_url: str


@dataclass(frozen=True)
class _Verdict:
    outcome: Outcome
    failure_class: FailureClass | None = None
    code: str | None = None
    status_code: int | None = None
    retry_after_seconds: float | None = None
    response_excerpt: str = ""


_TIMED_OUT = _Verdict("retry", FailureClass.TIMEOUT, "timeout")


@dataclass(frozen=True)
class _Redirect:
    location: str
    status_code: int


def new_client(
    *, verify: ssl.SSLContext | bool = True, max_connections: int = 16
) -> httpx.AsyncClient:
    """An httpx client fit for :func:`deliver`; the caller closes it.

    What :func:`deliver` relies on, if you build your own: ``trust_env=False`` (proxy
    variables would send requests through a proxy that resolves names itself, and
    ``SSL_CERT_FILE`` would change whom we trust); HTTP/1.1 only (an HTTP/2 connection is
    shared between requests while still connecting, whatever their TLS name); no ``auth``,
    ``base_url`` or default headers meant for one receiver, since the client serves all of
    them. Redirects are never followed by the client: :func:`deliver` does it per hop.
    Cookies are refused, so no receiver can plant one that another would see.
    """
    return httpx.AsyncClient(
        verify=verify,
        trust_env=False,
        http1=True,
        http2=False,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=max_connections),
        cookies=http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[])),
    )


async def deliver(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    policy: TargetPolicy,
    timeout_seconds: float,
    max_redirects: int = 3,
) -> DeliveryResult:
    """POST ``body`` to ``url`` once (plus same-origin redirects) and judge the answer.

    ``timeout_seconds`` bounds the whole attempt: DNS, connecting, every redirect hop and
    reading the response excerpt. ``headers`` are sent as given (signature headers
    included), with ``Content-Type: application/json`` and ``User-Agent`` added unless
    present; ``Host``, ``Connection``, ``Accept-Encoding`` and the body framing are ours.
    Raises only for programming errors and cancellation, never for the target's doing.

    Delivery is at-least-once: a receiver that answers 2xx but trickles its body past
    the deadline is reported as a timeout, and will see the event again.
    """
    started = time.perf_counter()
    attempt = _Attempt(client, body, _base_headers(headers), policy, httpx.Timeout(timeout_seconds))
    hop_url = url
    verdict = _TIMED_OUT  # stands if the deadline passes first
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout_seconds):
            for hop in range(max_redirects + 1):
                step = await attempt.hop(hop_url)
                if isinstance(step, _Verdict):
                    verdict = step
                    break
                if hop == max_redirects:
                    verdict = _failed("too_many_redirects", status_code=step.status_code)
                    break
                hop_url = step.location
    return DeliveryResult(
        outcome=verdict.outcome,
        status_code=verdict.status_code,
        failure_class=verdict.failure_class,
        code=verdict.code,
        retry_after_seconds=verdict.retry_after_seconds,
        duration_ms=(time.perf_counter() - started) * 1000,
        response_excerpt=verdict.response_excerpt,
        final_url=hop_url,
    )


def _base_headers(given: Mapping[str, str]) -> httpx.Headers:
    headers = httpx.Headers(given)
    for name in _FRAMING_HEADERS:
        headers.pop(name, None)
    headers.setdefault("Content-Type", "application/json")
    headers.setdefault("User-Agent", USER_AGENT)
    # Identity: the excerpt is read raw, and a compressed body could expand without bound.
    headers["Accept-Encoding"] = "identity"
    headers["Connection"] = "close"
    return headers


@dataclass(frozen=True)
class _Attempt:
    """What stays the same across the hops of one delivery attempt."""

    client: httpx.AsyncClient
    body: bytes
    headers: httpx.Headers
    policy: TargetPolicy
    http_timeout: httpx.Timeout

    async def hop(self, url: str) -> _Verdict | _Redirect:
        """Check, resolve and POST to ``url``; a verdict, or where it redirects us."""
        try:
            parts = check_url(url)
            addresses = await resolve(parts.hostname or "", _port(parts), self.policy)
        except TargetUnresolvable as exc:
            return _Verdict("retry", FailureClass.TRANSIENT, exc.reason)
        except TargetRefused as exc:
            return _failed(exc.reason)
        except BadUserInput as exc:
            return _failed(str(exc.extensions.get("reason", "webhook_url_invalid")))
        try:
            response = await self._send(parts, addresses)
        except httpx.TransportError as exc:
            return _network_verdict(exc)
        try:
            return await _judge(response, url, parts)
        finally:
            await response.aclose()

    async def _send(self, parts: SplitResult, addresses: list[Address]) -> httpx.Response:
        """The response (body unread) from the first address that takes the connection."""
        for address in addresses[:-1]:
            with contextlib.suppress(httpx.ConnectError):
                return await self._send_to(parts, address)
        return await self._send_to(parts, addresses[-1])

    async def _send_to(self, parts: SplitResult, address: Address) -> httpx.Response:
        ip_host = f"[{address}]" if address.version == 6 else str(address)
        pinned = urlunsplit(
            (parts.scheme, f"{ip_host}:{_port(parts)}", parts.path or "/", parts.query, "")
        )
        headers = httpx.Headers(self.headers)
        headers["Host"] = _host_header(parts)
        request = self.client.build_request(
            "POST",
            pinned,
            content=self.body,
            headers=headers,
            timeout=self.http_timeout,
            extensions={"sni_hostname": parts.hostname} if parts.scheme == "https" else {},
        )
        # Deliveries carry no cookies, whatever the headers or the client's jar hold: one
        # receiver must never see what another set.
        request.headers.pop("cookie", None)
        return await self.client.send(request, stream=True, follow_redirects=False)


def _host_header(parts: SplitResult) -> str:
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return host if parts.port is None else f"{host}:{parts.port}"


def _port(parts: SplitResult) -> int:
    return parts.port or _DEFAULT_PORTS[parts.scheme]


async def _judge(response: httpx.Response, url: str, parts: SplitResult) -> _Verdict | _Redirect:
    status = response.status_code
    location = response.headers.get("location")
    if status in _REDIRECTS and location:
        return _follow(url, parts, location, status)
    excerpt = await _excerpt(response)
    if 200 <= status <= 299:
        return _Verdict("delivered", status_code=status, response_excerpt=excerpt)
    code = f"http_{status}"
    wait = None
    if status in (429, 503):
        wait = retry_after(response.headers.get("retry-after"), now=time.time())
    if status == 429:
        return _Verdict("retry", FailureClass.RATE_LIMITED, code, status, wait, excerpt)
    if status in _TRANSIENT or 500 <= status <= 599:
        return _Verdict("retry", FailureClass.TRANSIENT, code, status, wait, excerpt)
    return _failed(code, status_code=status, response_excerpt=excerpt)


def _follow(url: str, parts: SplitResult, location: str, status: int) -> _Verdict | _Redirect:
    """Follow a redirect to the same scheme, host and port, or to https on the same host.

    The upgrade may change the port (http://h:8080 to https://h:8443): the host name is
    what the subscriber chose, and the next hop is resolved and checked like the first.
    """
    try:
        target = urljoin(url, location)
        new = check_url(target)
    except (ValueError, BadUserInput):
        return _failed("redirect_refused", status_code=status)
    same_origin = new.scheme == parts.scheme and _port(new) == _port(parts)
    upgrade = (parts.scheme, new.scheme) == ("http", "https")
    if new.hostname == parts.hostname and (same_origin or upgrade):
        return _Redirect(target, status)
    return _failed("redirect_refused", status_code=status)


async def _excerpt(response: httpx.Response) -> str:
    """The body's first characters; best effort, as the status alone decides the outcome."""
    raw = bytearray()
    with contextlib.suppress(httpx.TransportError):
        # aiter_raw is an async generator (typed as a mere iterator): close it now rather
        # than leave it suspended for the garbage collector after the early break.
        chunks = cast(AsyncGenerator[bytes, None], response.aiter_raw())
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                raw += chunk
                if len(raw) >= _EXCERPT_BYTES:
                    break
    text = bytes(raw[:_EXCERPT_BYTES]).decode(_charset(response), errors="replace")
    return text[:EXCERPT_CHARS]


def _charset(response: httpx.Response) -> str:
    declared = response.charset_encoding
    if declared:
        with contextlib.suppress(LookupError):
            return codecs.lookup(declared).name
    return "utf-8"


def _network_verdict(exc: httpx.TransportError) -> _Verdict:
    if isinstance(exc, httpx.TimeoutException):
        return _Verdict("retry", FailureClass.TIMEOUT, "timeout")
    if isinstance(exc, httpx.ConnectError):
        code = "tls_error" if _caused_by_tls(exc) else "connect_error"
        return _Verdict("retry", FailureClass.TRANSIENT, code)
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return _Verdict("retry", FailureClass.TRANSIENT, "network_error")
    raise exc  # LocalProtocolError, UnsupportedProtocol...: our request was wrong


def _caused_by_tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # exception chains are short; the bound guards against a cycle
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _failed(code: str, *, status_code: int | None = None, response_excerpt: str = "") -> _Verdict:
    return _Verdict("failed", FailureClass.PERMANENT, code, status_code, None, response_excerpt)


def retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay-seconds or HTTP-date), or None.

    Clamped to 0..3600: a date in the past means "now", and no receiver may park a
    delivery for longer than an hour with one header. ``now`` is epoch seconds.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        digits = value.lstrip("0") or "0"
        seconds = float(digits) if len(digits) <= 9 else MAX_RETRY_AFTER_SECONDS
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        seconds = assume_utc(when).timestamp() - now  # "-0000" is UTC, per RFC 5322
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)
