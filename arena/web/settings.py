"""What `arena web` is told: the database, where to listen, who may read and submit. One place
for the web's settings and their defaults."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..errors import UsageError, quoted

DEFAULT_LISTEN = "127.0.0.1:8000"  # loopback unless told otherwise: nothing is public by accident
PAGE_SIZE = 50  # games per page of a game list
MIB = 1 << 20
MAX_UPLOAD_BYTES = 10 * MIB  # a submitted bot archive (the archive format allows more: arena/bot_archive.py)
CHECK_TIMEOUT_S = 300.0  # a submission's conformance check is stopped (and rejected) after this
CHECK_GAMES = 2  # games of a submission's check against each opponent (referee check --games)


@dataclass(frozen=True)
class WebSettings:
    """One web app: the database it reads (``db``, a SQLAlchemy URL) and how it is served."""

    db: str
    host: str = "127.0.0.1"
    port: int = 8000
    private: bool = False  # True: every page needs a user's token, not only submission
    submit: str | None = None  # the ladder logged-in users submit bots to (None: submission is closed)
    max_upload_bytes: int = MAX_UPLOAD_BYTES
    check_timeout_s: float = CHECK_TIMEOUT_S
    check_games: int = CHECK_GAMES
    sandbox_from: str | None = None  # a tournament file whose [sandbox] the checks run under


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) -> (host, port); a bad one is a UsageError."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen must be HOST:PORT with a port from 1 to 65535, not {quoted(text)}")
    host = host.removeprefix("[").removesuffix("]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(f"--listen host must be an IP address or localhost, not {quoted(host)}") from None
    return host, int(port)
