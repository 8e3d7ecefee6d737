"""What `arena web` is told: the database, where to listen, who may read and submit. One place
for the web's settings and their defaults."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..errors import UsageError, quoted

DEFAULT_LISTEN = "127.0.0.1:8000"  # loopback unless told otherwise: nothing is public by accident
PAGE_SIZE = 50  # games per page of a game list
EVENTS_POLL_S = 0.25  # how often a game's event stream reads its live row (the writers' own interval)
EVENTS_MAX_S = 3600.0  # the longest one event stream stays open (a browser's EventSource then reconnects)
EVENTS_HEARTBEAT_S = 15.0  # a comment this often when nothing changes, so proxies keep the stream open
MIB = 1 << 20
MAX_UPLOAD_BYTES = 10 * MIB  # a submitted bot archive (the archive format allows more: arena/bot_archive.py)
CHECK_TIMEOUT_S = 300.0  # a submission's conformance check is stopped (and rejected) after this
CHECK_GAMES = 2  # games of a submission's check against each opponent (referee check --games)
MAX_ID = 2**31 - 1  # the largest game number or submission id (PostgreSQL's INTEGER, the columns' type)


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
    submit: str | None = None  # the ladder logged-in users submit bots to (None: submission is closed)
    max_upload_bytes: int = MAX_UPLOAD_BYTES
    check_timeout_s: float = CHECK_TIMEOUT_S
    check_games: int = CHECK_GAMES
    sandbox_from: str | None = None  # a tournament file whose [sandbox] the checks run under
    metrics_listen: str | None = None  # HOST:PORT of its Prometheus metrics (served by serve.py), None: off


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


def parse_id(text: str) -> int | None:
    """A game number or id given as text: ASCII digits only (``str.isdigit`` also takes ``²`` and
    other scripts' digits), at most MAX_ID; None for anything else. Never a 500: a long string is
    refused by its length before ``int`` sees it."""
    if not text or len(text) > len(str(MAX_ID)) or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= MAX_ID else None
