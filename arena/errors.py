"""Errors the arena reports to people as one line (the CLI exits 2 on them); the helpers that keep
user text (names, paths, values) from breaking that line are the referee's (referee/errors.py)."""

from __future__ import annotations

from referee.errors import EXIT_USAGE, UsageError, one_line, quoted, shown  # one of each for both commands

__all__ = ["ArenaError", "UsageError", "quoted", "shown", "one_line"]


class ArenaError(Exception):
    """Base of the arena's own errors (a tournament file, the database, the run lease).
    ``exit_status`` is what the ``arena`` command exits with when one reaches it."""

    exit_status = EXIT_USAGE
