"""Errors of the referee (the match runner and its servers); rules errors live in rules/errors.py."""

from __future__ import annotations


class RefereeError(Exception):
    """Base of the referee's own errors."""


class EndpointError(RefereeError, ValueError):
    """A bot endpoint that is neither an address nor a command that can be started."""


class ListenError(RefereeError):
    """An address the Referee service cannot listen on (malformed, port out of range, or taken)."""
