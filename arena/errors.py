"""Errors the arena reports to people as one line (the CLI exits 2 on them)."""

from __future__ import annotations


class UsageError(Exception):
    """A problem with what the user asked for: one line, exit status 2."""
