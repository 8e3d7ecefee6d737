"""Errors of the referee (the match runner and its servers); rules errors live in rules/errors.py."""

from __future__ import annotations

EXIT_USAGE = 2  # the exit status of a problem with what the user asked for (option, file, address)


class RefereeError(Exception):
    """Base of the referee's own errors. ``exit_status`` is what a command exits with when one
    reaches it (the one place that mapping is made; a gRPC status joins it when the service needs one)."""

    exit_status = EXIT_USAGE


class UsageError(RefereeError):
    """A problem with what the user asked for (an option, a file, a folder): one line, exit 2.
    The arena's commands use this one too."""


class EndpointError(RefereeError, ValueError):
    """A bot endpoint that is neither an address nor a command that can be started."""


class ListenError(RefereeError):
    """An address the Referee service cannot listen on (malformed, port out of range, or taken)."""


class ServiceSettingsError(RefereeError):
    """A setting of the Referee service that cannot be used or would leave it open: a token file
    that cannot be read, a weak token, TLS files that do not fit, a public address without
    authentication, a limit out of range (one line, exit 2)."""
