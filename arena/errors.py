"""Errors the arena reports to people as one line (the CLI exits 2 on them), and the helpers that
keep user text (names, paths, values) from breaking that line."""

from __future__ import annotations

from referee.errors import EXIT_USAGE, UsageError  # one UsageError for both commands

__all__ = ["ArenaError", "UsageError", "quoted", "shown", "one_line"]

SHOWN_CHARACTERS = 100  # longer user text is cut in messages (a 200 kB name stays one readable line)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


class ArenaError(Exception):
    """Base of the arena's own errors (a tournament file, the database, the run lease).
    ``exit_status`` is what the ``arena`` command exits with when one reaches it."""

    exit_status = EXIT_USAGE


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
