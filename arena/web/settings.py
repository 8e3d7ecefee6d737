"""What `arena web` is told: the database, where to listen, who may read and submit, which Host
names it answers to and which proxies it believes. One place for the web's settings and their
defaults."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import UsageError, quoted

if TYPE_CHECKING:  # the tournament file's machinery loads the database's: not for `arena web --help`
    from ..config import StandingsSettings
    from ..notify.deliver import DeliverySettings

DEFAULT_LISTEN = "127.0.0.1:8000"  # loopback unless told otherwise: nothing is public by accident
PAGE_SIZE = 50  # games per page of a game list
EVENTS_POLL_S = 0.25  # how often a game's event stream reads its live row (the writers' own interval)
EVENTS_MAX_S = 3600.0  # the longest one event stream stays open (a browser's EventSource then reconnects)
EVENTS_HEARTBEAT_S = 15.0  # a comment this often when nothing changes, so proxies keep the stream open
MIB = 1 << 20
MAX_UPLOAD_BYTES = 10 * MIB  # a submitted bot archive (the archive format allows more: referee/packages/archive.py)
CHECK_TIMEOUT_S = 300.0  # a submission's conformance check is stopped (and rejected) after this
CHECK_GAMES = 2  # games of a submission's check against each opponent (referee check --games)
CHECK_CONCURRENCY = 1  # submissions' checks run at once (each plays real sandboxed bots)
UPLOAD_THREADS = 2  # threads that check uploaded archives (none of the request threads every page needs)
MAX_IN_FLIGHT = 2  # a user's submissions waiting for or in their check
MAX_PER_HOUR = 10  # a user's submissions in the last hour
MAX_KEPT_BYTES = 256 * MIB  # a user's stored archives, plus the unpacked copies of those that may play
EVENTS_PER_CLIENT = 8  # event streams one client address may hold open at once (a few tabs of live games)
EVENTS_TOTAL = 256  # event streams the whole server holds open at once
EVENTS_RETRY_AFTER_S = 10  # the Retry-After of a stream refused for a cap
# whose X-Forwarded-Proto and X-Forwarded-For are believed: a proxy on this machine, as uvicorn's default
TRUSTED_PROXIES = ("127.0.0.1", "::1")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")  # the names a loopback listen answers to
MAX_ID = 2**31 - 1  # the largest game number or submission id (PostgreSQL's INTEGER, the columns' type)
UNSPECIFIED_HOSTS = ("0.0.0.0", "::")  # a listen on every interface says nothing of the server's name
# a DNS name (``_`` too, as container networks name services), optionally ``*.`` first for its subdomains
_HOST_NAME = re.compile(r"(\*\.)?[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*")


@dataclass(frozen=True)
class WebSettings:
    """One web app: the database it reads (``db``, a SQLAlchemy URL) and how it is served."""

    db: str
    host: str = "127.0.0.1"
    port: int = 8000
    private: bool = False  # True: every page needs a user's token, not only submission
    events_poll_s: float = EVENTS_POLL_S
    events_max_s: float = EVENTS_MAX_S
    events_heartbeat_s: float = EVENTS_HEARTBEAT_S
    page_size: int = PAGE_SIZE  # games per page of a game list
    logs: tuple[tuple[str, str], ...] = ()  # (tournament name, its bot logs' folder) where this machine has them
    # (tournament name, its file's [standings]) when served with its file; any other tournament: as stored
    standings: tuple[tuple[str, StandingsSettings], ...] = ()
    submit: str | None = None  # the ladder logged-in users submit bots to (None: submission is closed)
    max_upload_bytes: int = MAX_UPLOAD_BYTES
    check_timeout_s: float = CHECK_TIMEOUT_S
    check_games: int = CHECK_GAMES
    check_concurrency: int = CHECK_CONCURRENCY
    # what one user may have (arena/store/submissions.py's SubmissionLimits): checks in flight,
    # submissions in the last hour, bytes kept (archives, and their unpacked copies)
    max_in_flight: int = MAX_IN_FLIGHT
    max_per_hour: int = MAX_PER_HOUR
    max_kept_bytes: int = MAX_KEPT_BYTES
    sandbox_from: str | None = None  # a tournament file whose [sandbox] the checks run under
    metrics_listen: str | None = None  # HOST:PORT of its Prometheus metrics (served by serve.py), None: off
    public_url: str | None = None  # the origin people reach it at (https://arena.example.org), None: not said
    allowed_hosts: tuple[str, ...] = ()  # more Host names it answers to (--allowed-host), beside hosts()'s own
    trusted_proxies: tuple[str, ...] = TRUSTED_PROXIES  # addresses or networks whose X-Forwarded-* are believed
    events_per_client: int = EVENTS_PER_CLIENT
    events_total: int = EVENTS_TOTAL
    delivery: DeliverySettings | None = None  # how the deliverer beside --submit tries (None: its defaults)

    def hosts(self) -> tuple[str, ...]:
        """The Host names (port aside, lower case) this server answers to; any other is refused
        (arena/web/guard.py). The listen address's own (a loopback listen: every loopback name),
        the public URL's, and ``allowed_hosts``; a listen on every interface adds none, so such a
        server needs a public URL or an allowed host."""
        found: list[str] = []
        listen = self.host.lower()
        if listen not in UNSPECIFIED_HOSTS:
            found += list(LOOPBACK_HOSTS) if _loopback(listen) else [listen]
        if self.public_url is not None:
            found.append(normal_host(urlsplit(self.public_url).hostname or ""))
        found += [normal_host(h) for h in self.allowed_hosts]
        return tuple(dict.fromkeys(found))

    @property
    def secure_cookies(self) -> bool:
        """Whether the session cookie is Secure whatever the request's scheme: the public URL is
        https (a proxy that terminates TLS but sends no X-Forwarded-Proto still gets Secure)."""
        return self.public_url is not None and self.public_url.startswith("https://")


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) -> (host, port); a bad one is a UsageError."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not (port.isascii() and port.isdigit() and len(port) <= 5) or not 0 < int(port) < 65536:
        raise UsageError(f"--listen must be HOST:PORT with a port from 1 to 65535, not {quoted(text)}")
    host = host.removeprefix("[").removesuffix("]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(f"--listen host must be an IP address or localhost, not {quoted(host)}") from None
    return host, int(port)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def normal_host(host: str) -> str:
    """A Host name as compared: lower case, no brackets around an IPv6 address, no final dot."""
    return host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


def parse_public_url(text: str) -> str:
    """``--public-url``: an http or https origin (``https://arena.example.org``, a port allowed),
    served at its root; returned without a final slash. A bad one is a UsageError."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (a bad port raises here)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.username \
            or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(f"--public-url must be http(s)://HOST[:PORT] (the app serves at its root), not {quoted(text)}")
    parse_allowed_host(parts.hostname, "--public-url's host")
    return text.rstrip("/")


def parse_allowed_host(text: str, what: str = "--allowed-host") -> str:
    """``--allowed-host``: a host name (``arena.example.org``), ``*.example.org`` (its subdomains),
    an IP address, or ``*`` (any: only behind a proxy that checks Host itself). No port: a Host
    is compared without its port. A bad one is a UsageError."""
    host = normal_host(text)
    if host == "*" or _HOST_NAME.fullmatch(host) and len(host) <= 253:
        return host
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        raise UsageError(f"{what} must be a host name, *.DOMAIN, an IP address or *, without a port, "
                         f"not {quoted(text)}") from None


def parse_trusted_proxy(text: str) -> str:
    """``--trusted-proxy``: an IP address or a network (``10.0.0.0/8``) whose forwarded headers
    are believed. A bad one (``10.0.0.1/8`` too: host bits set) is a UsageError."""
    try:
        text = text.strip()
        return str(ipaddress.ip_network(text, strict=True)) if "/" in text else str(ipaddress.ip_address(text))
    except ValueError:
        raise UsageError(f"--trusted-proxy must be an IP address or a network such as 10.0.0.0/8, "
                         f"not {quoted(text)}") from None


def parse_id(text: str) -> int | None:
    """A game number or id given as text: ASCII digits only (``str.isdigit`` also takes ``²`` and
    other scripts' digits), at most MAX_ID; None for anything else. Never a 500: a long string is
    refused by its length before ``int`` sees it."""
    if not text or len(text) > len(str(MAX_ID)) or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= MAX_ID else None
