"""URL rules shared by configuration and the token validator."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["check_issuer_url", "is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_issuer_url(issuer: str) -> None:
    """Raise ValueError unless ``issuer`` is an https URL, or http on a loopback host.

    Keys fetched over plain http could be swapped by anyone on the path, who could then
    forge tokens; loopback (the local issuer, test doubles) never leaves the machine.
    """
    parts = urlsplit(issuer)
    host = parts.hostname
    if not host:
        raise ValueError(f"{issuer!r} is not an absolute URL with a host")
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and is_loopback_host(host):
        return
    raise ValueError(f"{issuer!r} must use https (plain http is accepted on loopback only)")
