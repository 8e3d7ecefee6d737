"""Errors of the referee (the match runner and its servers); rules errors live in rules/errors.py."""

from __future__ import annotations

import errno

EXIT_USAGE = 2  # the exit status of a problem with what the user asked for (option, file, address)
EXIT_PLATFORM = 4  # the exit status of a run stopped by a platform fault (PlatformFault): no bot's doing


class RefereeError(Exception):
    """Base of the referee's own errors. ``exit_status`` is what a command exits with when one
    reaches it (the one place that mapping is made; a gRPC status joins it when the service needs one)."""

    exit_status = EXIT_USAGE


class UsageError(RefereeError):
    """A problem with what the user asked for (an option, a file, a folder): one line, exit 2.
    The arena's commands use this one too."""


class PlatformFault(RefereeError):
    """The platform, not a bot, could not play a game: a log or record it could not write (a full
    disk, too many open files, a read-only file system), a sandbox it could not set up, a runtime
    the bot's uid cannot reach, its own memory or file descriptors exhausted, its database lost.
    Never recorded as a bot's failure nor rated: the game is played again (elsewhere, under a
    queue), a bounded number of times. ``condition`` names the kind, for metrics and status
    (CONDITIONS); the message says what failed and where, in one line."""

    exit_status = EXIT_PLATFORM
    CONDITIONS = ("disk", "descriptors", "memory", "sandbox", "runtime", "database")

    def __init__(self, condition: str, message: str) -> None:
        if condition not in self.CONDITIONS:
            raise ValueError(f"unknown platform condition {condition!r}")
        super().__init__(message)
        self.condition = condition


def platform_fault(exc: OSError, what: str) -> PlatformFault:
    """The PlatformFault for an OSError of the platform's own files or resources: ``what`` failed,
    with the system's reason; its condition from the errno (ENOSPC/EDQUOT/EROFS/EIO: disk,
    EMFILE/ENFILE: descriptors, ENOMEM: memory; anything else: disk, where the referee's files live)."""
    condition = {errno.EMFILE: "descriptors", errno.ENFILE: "descriptors", errno.ENOMEM: "memory"}.get(
        exc.errno or 0, "disk")
    return PlatformFault(condition, f"{what}: {exc.strerror or exc}")


class EndpointError(RefereeError, ValueError):
    """A bot endpoint that is neither an address nor a command that can be started."""


class ListenError(RefereeError):
    """An address the Referee service cannot listen on (malformed, port out of range, or taken)."""


class ServiceSettingsError(RefereeError):
    """A setting of the Referee service that cannot be used or would leave it open: a token file
    that cannot be read, a weak token, TLS files that do not fit, a public address without
    authentication, a limit out of range (one line, exit 2)."""


# --- user text in one-line messages (both commands) ----------------------------------------------

SHOWN_CHARACTERS = 100  # longer user text is cut in messages (a 200 kB name stays one readable line)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def quoted(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` in double quotes, every unprintable character escaped as TOML and JSON write it
    (``\\n``, ``\\u001b``), cut after ``limit`` characters: one line, whatever the user wrote."""
    cut = text[:limit]
    body = "".join(_ESCAPES.get(c) or (c if c.isprintable() else _escape(c)) for c in cut)
    return f'"{body}"' if cut == text else f'"{body}..." ({len(text)} characters)'


def shown(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` as it is when it is printable and short (a file name, a URL), else ``quoted``."""
    return text if text.isprintable() and len(text) <= limit else quoted(text, limit)


def one_line(text: str) -> str:
    """A whole message with any line break or control character escaped: the last guard before
    a message reaches stderr, so a message is one line even if some part of it was not escaped."""
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    code = ord(c)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
