"""Which webhook URLs the arena sends to: http or https only, and (unless the operator allows it,
``arena notify settings --allow-private``) no address of this machine or its networks: loopback,
private, link-local (cloud metadata at 169.254.169.254), shared, multicast or reserved. A participant's
URL must not make the server reach what only the server can reach (SSRF). The host is resolved
when the URL is set and again at each delivery, which connects to the address it checked (a DNS
answer that changes in between reaches nothing else)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from ..errors import ArenaError

MAX_URL = 2000


class TargetRefused(ArenaError):
    """A webhook URL the arena does not send to; the message says why in one line."""


def check_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an acceptable URL's form, or TargetRefused."""
    if not url or len(url) > MAX_URL or any(c.isspace() or ord(c) < 32 for c in url):
        raise TargetRefused(f"a webhook URL is an http(s) URL of at most {MAX_URL} characters, without spaces")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"the webhook URL is malformed: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("a webhook URL must start with http:// or https://")
    if not parts.hostname or parts.username or parts.password:
        raise TargetRefused("a webhook URL names a host, and no user or password")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def private(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def resolve(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to for ``host``: its first, once every address it has is allowed."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TargetRefused(f"the webhook's host {host!r} does not resolve: {exc}") from None
    addresses = [str(info[4][0]) for info in found]
    if not addresses:
        raise TargetRefused(f"the webhook's host {host!r} has no address")
    if not allow_private:
        inside = [a for a in addresses if private(a)]
        if inside:
            raise TargetRefused(f"the webhook's host {host!r} is at {inside[0]}, an address of this server's own "
                                "networks, which this arena does not send to")
    return addresses[0]


def check_target(url: str, allow_private: bool) -> None:
    """A URL people may set: its form, and its host's addresses now."""
    _, host, port, _ = check_url(url)
    resolve(host, port, allow_private)
