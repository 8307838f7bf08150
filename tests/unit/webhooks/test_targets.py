from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import pytest

from fortemi.platform.errors import BadUserInput
from fortemi.webhooks.targets import (
    TargetPolicy,
    TargetRefused,
    TargetUnresolvable,
    check_url,
    is_public,
    resolve,
)

# --- check_url -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/fortemi",
        "http://hooks.example.com:8080/in?token=abc",
        "https://HOOKS.Example.com./",
        "https://93.184.215.14/hook",
        "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:8443/hook",
        "https://under_score.example.com/",
        "https://example.com/ünïcode/path",
        "https://example.com/" + "a" * (2048 - len("https://example.com/")),
    ],
)
def test_check_url_accepts_absolute_http_urls(url: str) -> None:
    parts = check_url(url)
    assert parts.scheme in ("http", "https")
    assert parts.hostname


def test_check_url_returns_the_split_url() -> None:
    parts = check_url("https://Hooks.Example.com:8443/in?x=1")
    assert (parts.hostname, parts.port, parts.path, parts.query) == (
        "hooks.example.com",
        8443,
        "/in",
        "x=1",
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/", "webhook_url_scheme"),
        ("file:///etc/passwd", "webhook_url_scheme"),
        ("gopher://127.0.0.1:6379/_INFO", "webhook_url_scheme"),
        ("example.com/hook", "webhook_url_scheme"),
        ("//example.com/hook", "webhook_url_scheme"),
        ("https://user:pass@example.com/", "webhook_url_credentials"),
        ("https://user@example.com/", "webhook_url_credentials"),
        ("https://example.com@127.0.0.1/", "webhook_url_credentials"),
        ("https://example.com/#frag", "webhook_url_fragment"),
        ("https://example.com/#", "webhook_url_fragment"),
        ("https:/example.com", "webhook_url_invalid"),
        ("https:///path", "webhook_url_invalid"),
        ("https://", "webhook_url_invalid"),
        ("https://example.com:0/", "webhook_url_invalid"),
        ("https://example.com:65536/", "webhook_url_invalid"),
        ("https://example.com:http/", "webhook_url_invalid"),
        ("https://exa mple.com/", "webhook_url_invalid"),
        ("https://example.com/a b", "webhook_url_invalid"),
        ("https://example.com/\r\nX-Injected: 1", "webhook_url_invalid"),
        ("https://example.com/\x00", "webhook_url_invalid"),
        ("https://example.com/\u200b", "webhook_url_invalid"),
        ("https://example.com\\@evil.com/", "webhook_url_invalid"),
        ("https://[::1/", "webhook_url_invalid"),
        ("https://[fe80::1%25eth0]/", "webhook_url_invalid"),
        ("https://bücher.example/", "webhook_url_invalid"),
        ("https://-bad-.example.com/", "webhook_url_invalid"),
        ("https://a..b.example.com/", "webhook_url_invalid"),
        ("https://" + "a" * 64 + ".example.com/", "webhook_url_invalid"),
        ("https://example.com/" + "a" * 2048, "webhook_url_invalid"),
    ],
)
def test_check_url_refuses_with_a_stable_reason(url: str, reason: str) -> None:
    with pytest.raises(BadUserInput) as refused:
        check_url(url)
    assert refused.value.extensions == {"field": "url", "reason": reason}
    assert refused.value.code == "BAD_USER_INPUT"


# --- is_public ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "93.184.215.14",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",  # IPv4-mapped: judged as the IPv4 address
        "2002:808:808::1",  # 6to4 of a public address
        "64:ff9b::808:808",  # NAT64 of a public address
    ],
)
def test_is_public_accepts_globally_routable_unicast(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",  # loopback
        "127.255.255.254",
        "10.1.2.3",  # private
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # link-local: the cloud metadata service
        "0.0.0.0",  # noqa: S104 -- unspecified; an address under test, nothing binds it
        "100.64.0.1",  # shared address space (carrier-grade NAT)
        "224.0.0.1",  # multicast
        "239.255.255.250",
        "240.0.0.1",  # reserved
        "255.255.255.255",  # broadcast
        "192.0.2.1",  # documentation
        "198.18.0.1",  # benchmarking
        "::1",  # loopback
        "::",  # unspecified
        "fe80::1",  # link-local
        "fc00::1",  # unique local
        "fd12:3456::1",
        "ff02::1",  # multicast
        "2001:db8::1",  # documentation
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:169.254.169.254",  # IPv4-mapped metadata service
        "::ffff:10.0.0.1",
        "::7f00:1",  # IPv4-compatible (deprecated) loopback
        "2002:7f00:1::1",  # 6to4 embedding 127.0.0.1
        "2002:a00:1::1",  # 6to4 embedding 10.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 embedding 169.254.169.254
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "64:ff9b::7f00:1",  # NAT64 embedding 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 embedding 169.254.169.254
    ],
)
def test_is_public_refuses_every_non_public_kind(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


# --- TargetPolicy --------------------------------------------------------------------------


def test_policy_from_cidrs_parses_both_families() -> None:
    policy = TargetPolicy.from_cidrs(["10.0.0.0/8", " fd00::/8 "])
    assert policy.allowed_networks == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("fd00::/8"),
    )


@pytest.mark.parametrize("cidr", ["10.0.0.1/8", "not-a-network", "10.0.0.0/33", ""])
def test_policy_from_cidrs_names_the_bad_entry(cidr: str) -> None:
    with pytest.raises(ValueError, match="is not a network in CIDR form"):
        TargetPolicy.from_cidrs(["192.168.0.0/16", cidr])


def test_policy_allows_public_addresses_and_its_networks_only() -> None:
    policy = TargetPolicy.from_cidrs(["10.0.0.0/8"])
    assert policy.allows(ipaddress.ip_address("8.8.8.8"))
    assert policy.allows(ipaddress.ip_address("10.9.9.9"))
    assert not policy.allows(ipaddress.ip_address("192.168.1.1"))
    assert not policy.allows(ipaddress.ip_address("fd00::1"))


def test_default_policy_allows_no_private_network() -> None:
    assert not TargetPolicy().allows(ipaddress.ip_address("127.0.0.1"))


# --- resolve -------------------------------------------------------------------------------

LOOPBACK = TargetPolicy.from_cidrs(["127.0.0.0/8", "::1/128"])


async def test_resolve_takes_a_public_ip_literal_as_is() -> None:
    assert await resolve("8.8.8.8", 443, TargetPolicy()) == [ipaddress.ip_address("8.8.8.8")]


async def test_resolve_judges_a_mapped_literal_as_its_ipv4_address() -> None:
    assert await resolve("::ffff:8.8.8.8", 443, TargetPolicy()) == [ipaddress.ip_address("8.8.8.8")]
    with pytest.raises(TargetRefused):
        await resolve("::ffff:127.0.0.1", 443, TargetPolicy())
    assert await resolve("::ffff:127.0.0.1", 443, LOOPBACK) == [ipaddress.ip_address("127.0.0.1")]


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "::1", "169.254.169.254", "0.0.0.0", "localhost"],  # noqa: S104 -- not a bind
)
async def test_resolve_refuses_non_public_targets_by_default(host: str) -> None:
    with pytest.raises(TargetRefused) as refused:
        await resolve(host, 80, TargetPolicy())
    assert refused.value.reason == "webhook_target_private"
    assert refused.value.extensions == {"field": "url", "reason": "webhook_target_private"}
    assert refused.value.address is not None


async def test_resolve_refuses_numeric_forms_the_resolver_reads_as_loopback() -> None:
    # inet_aton shorthand: not an IP literal to Python, but 127.0.0.1 to the resolver.
    with pytest.raises(TargetRefused):
        await resolve("127.1", 80, TargetPolicy())


async def test_resolve_allows_loopback_inside_the_policys_networks() -> None:
    addresses = await resolve("localhost", 80, LOOPBACK)
    assert addresses
    assert all(address.is_loopback for address in addresses)


async def test_resolve_raises_unresolvable_for_a_name_without_addresses() -> None:
    with pytest.raises(TargetUnresolvable) as unresolvable:
        await resolve("no-such-host.invalid", 443, TargetPolicy())
    assert unresolvable.value.reason == "webhook_target_unresolvable"
    assert isinstance(unresolvable.value, BadUserInput)


def _answers(*addresses: str) -> Any:
    """A stand-in for the loop's resolver answering ``addresses`` for any name."""

    async def getaddrinfo(host: str, port: int, **_: object) -> list[Any]:
        out: list[Any] = []
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            out.append((family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port)))
        return out

    return getaddrinfo


async def test_resolve_refuses_when_any_answer_is_private(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        asyncio.get_running_loop(), "getaddrinfo", _answers("8.8.8.8", "10.0.0.1", "1.1.1.1")
    )
    with pytest.raises(TargetRefused) as refused:
        await resolve("mixed.example.com", 443, TargetPolicy())
    assert refused.value.address == ipaddress.ip_address("10.0.0.1")


async def test_refusal_message_does_not_reveal_what_a_name_resolves_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", _answers("10.20.30.40"))
    with pytest.raises(TargetRefused) as refused:
        await resolve("intranet.example.com", 443, TargetPolicy())
    assert "10.20.30.40" not in refused.value.message
    assert "10.20.30.40" not in str(refused.value.extensions)
    assert refused.value.address == ipaddress.ip_address("10.20.30.40")  # for the logs


async def test_resolve_returns_every_answer_once_in_resolver_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        asyncio.get_running_loop(),
        "getaddrinfo",
        _answers("2606:4700::1", "8.8.8.8", "::ffff:8.8.8.8", "2606:4700::1"),
    )
    assert await resolve("public.example.com", 443, TargetPolicy()) == [
        ipaddress.ip_address("2606:4700::1"),
        ipaddress.ip_address("8.8.8.8"),
    ]


async def test_resolve_never_returns_an_empty_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", _answers())
    with pytest.raises(TargetUnresolvable):
        await resolve("empty.example.com", 443, TargetPolicy())
