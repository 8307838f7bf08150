"""Which webhook URLs and addresses Fortemi will call: the guard against SSRF.

A webhook URL is checked twice. Its shape when it is stored and before every attempt
(:func:`check_url`), and its addresses on every attempt (:func:`resolve`), because a DNS
answer that was public yesterday may be private today (DNS rebinding). The transport
then connects to the very address :func:`resolve` approved and never resolves the name
again. Errors, all :class:`BadUserInput` with an ``extensions["reason"]``::

    BadUserInput                  webhook_url_scheme, webhook_url_credentials,
    │                             webhook_url_fragment, webhook_url_invalid
    └── TargetRefused             webhook_target_private
        └── TargetUnresolvable    webhook_target_unresolvable
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from urllib.parse import SplitResult, urlsplit

from fortemi.platform.errors import BadUserInput

__all__ = [
    "Address",
    "Network",
    "TargetPolicy",
    "TargetRefused",
    "TargetUnresolvable",
    "check_url",
    "is_public",
    "resolve",
]

Address = IPv4Address | IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_URL_LENGTH = 2048
_SCHEMES = ("http", "https")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_HOSTNAME = 253
# DNS64/NAT64's well-known prefix: the last 32 bits are the IPv4 address the gateway
# calls, so such an address is as public as that IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class TargetRefused(BadUserInput):
    """The webhook's host is, or resolves to, an address webhooks may not call.

    The message never names the address (that would let a caller map internal DNS);
    ``address`` carries it for logs.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str = "webhook_target_private",
        address: Address | None = None,
    ) -> None:
        super().__init__(message, field="url", reason=reason)
        self.reason = reason
        self.address = address


class TargetUnresolvable(TargetRefused):
    """The webhook's host name has no address right now (it may be a temporary DNS fault)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="webhook_target_unresolvable")


@dataclass(frozen=True)
class TargetPolicy:
    """Non-public networks webhooks may call anyway (a receiver on the LAN): an operator's choice.

    The default allows none: only globally routable addresses.
    """

    allowed_networks: tuple[Network, ...] = ()

    @classmethod
    def from_cidrs(cls, cidrs: Iterable[str]) -> TargetPolicy:
        """Parse ``["10.0.0.0/8", "fd00::/8"]``; ValueError names the first bad entry."""
        networks = []
        for cidr in cidrs:
            try:
                networks.append(ipaddress.ip_network(cidr.strip()))
            except ValueError as exc:
                raise ValueError(f"{cidr!r} is not a network in CIDR form: {exc}") from exc
        return cls(tuple(networks))

    def allows(self, address: Address) -> bool:
        return is_public(address) or any(address in net for net in self.allowed_networks)


def is_public(address: Address) -> bool:
    """Whether ``address`` is globally routable unicast, including any IPv4 it embeds.

    Refused: loopback, private, link-local (169.254.169.254, the cloud metadata service,
    among them), unspecified, multicast, reserved, shared (100.64/10), documentation, and
    IPv6 addresses that tunnel to such an IPv4 address (mapped, 6to4, Teredo, NAT64).
    """
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public(address.ipv4_mapped)
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            # Python counts the NAT64 prefix as reserved; what it reaches is the IPv4 part.
            tunnel_ok = address in _NAT64 or _is_public_unicast(address)
            return tunnel_ok and _is_public_unicast(embedded)
    return _is_public_unicast(address)


def _is_public_unicast(address: Address) -> bool:
    # is_global is False for loopback, private, link-local, unspecified and shared space,
    # but True for multicast and for some reserved IPv6 ranges, hence the extra checks.
    return address.is_global and not (address.is_multicast or address.is_reserved)


def _embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's address; the server half is the relay
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _canonical(address: Address) -> Address:
    """IPv4-mapped IPv6 (``::ffff:a.b.c.d``) is the IPv4 address: judge and dial it as such."""
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def check_url(url: str) -> SplitResult:
    """The parts of ``url`` if it is a webhook URL Fortemi accepts, else BadUserInput.

    Accepted: absolute ``http``/``https`` URLs of at most 2048 characters, with a host
    (a DNS name in ASCII, or an IP literal), an optional port 1-65535, no user or password,
    no fragment, and no whitespace, control characters or backslashes anywhere.
    Addresses are not checked here: that is :func:`resolve`'s job, on every attempt.
    """
    if len(url) > MAX_URL_LENGTH:
        raise _invalid(f"The webhook URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or not ch.isprintable() or ch == "\\" for ch in url):
        raise _invalid("The webhook URL must not contain spaces, control characters or '\\'")
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unbalanced or non-IPv6 [bracketed] host
        raise _invalid("The webhook URL could not be parsed") from exc
    if parts.scheme not in _SCHEMES:
        raise BadUserInput(
            "The webhook URL must start with https:// (or http://)",
            field="url",
            reason="webhook_url_scheme",
        )
    if "@" in parts.netloc:
        raise BadUserInput(
            "The webhook URL must not contain a user name or password; "
            "authenticate deliveries with the signature header instead",
            field="url",
            reason="webhook_url_credentials",
        )
    if "#" in url:
        raise BadUserInput(
            "The webhook URL must not contain a fragment (#...); it is never sent to the server",
            field="url",
            reason="webhook_url_fragment",
        )
    _check_host(parts.hostname)
    _check_port(parts)
    return parts


def _check_host(host: str | None) -> None:
    if not host:
        raise _invalid("The webhook URL needs a host, as in https://hooks.example.com/fortemi")
    if "%" in host:
        raise _invalid("The webhook host must not contain '%' (IPv6 zone ids are not supported)")
    if _ip_literal(host) is not None:
        return
    if not host.isascii():
        raise _invalid("Write the webhook host in its ASCII (xn--) form")
    labels = host.removesuffix(".").split(".")
    if len(host) > _MAX_HOSTNAME or not all(_LABEL.fullmatch(label) for label in labels):
        raise _invalid(f"{host[:80]!r} is not a valid host name")


def _check_port(parts: SplitResult) -> None:
    try:
        port = parts.port
    except ValueError as exc:
        raise _invalid("The webhook URL's port must be a number from 1 to 65535") from exc
    if port == 0:
        raise _invalid("The webhook URL's port must be a number from 1 to 65535")


def _invalid(message: str) -> BadUserInput:
    return BadUserInput(message, field="url", reason="webhook_url_invalid")


def _ip_literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def resolve(host: str, port: int, policy: TargetPolicy) -> list[Address]:
    """Every address of ``host``, in resolver order, if ``policy`` allows every one of them.

    All or nothing: a name with one private address among public ones is refused, so the
    address the transport picks never matters. IP literals are taken as they are. Raises
    TargetRefused (some address not allowed) or TargetUnresolvable (no address); never
    returns an empty list. The lookup itself has no deadline: callers bound it.
    """
    addresses = await _lookup(host, port)
    for address in addresses:
        if not policy.allows(address):
            raise TargetRefused(
                f"The webhook host {host!r} is or resolves to an address that is not publicly "
                "routable (loopback, private, link-local or reserved); Fortemi only calls "
                "public addresses unless an operator allows that network",
                address=address,
            )
    return addresses


async def _lookup(host: str, port: int) -> list[Address]:
    literal = _ip_literal(host)
    if literal is not None:
        return [_canonical(literal)]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
        raise _unresolvable(host) from exc
    found = (
        _canonical(ipaddress.ip_address(info[4][0]))
        for info in infos
        if info[0] in (socket.AF_INET, socket.AF_INET6)
    )
    addresses = list(dict.fromkeys(found))  # de-duplicated, resolver order kept
    if not addresses:
        raise _unresolvable(host)
    return addresses


def _unresolvable(host: str) -> TargetUnresolvable:
    return TargetUnresolvable(
        f"The webhook host {host!r} does not resolve; check the name, or retry later if its "
        "DNS is temporarily down"
    )
