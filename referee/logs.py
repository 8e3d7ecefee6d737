"""Where log records go and how they look: ``--log-format text`` (the readable lines each command
has always printed) or ``json`` (one JSON object per record on stderr, for a log collector), for
both the ``referee`` and the ``arena`` commands (docs/operations.md, "Logs").

A JSON line holds ``time`` (ISO-8601, UTC), ``level``, ``logger`` and ``message``, then those of
FIELDS the record carries (``log.info(..., extra={"game_id": ...})``), then ``exc_info`` when there
is an exception. Only FIELDS are copied: other libraries' extras (procrastinate's ``job`` dicts,
say) stay out unless a ``fields_from`` function given to ``configure`` turns them into FIELDS, so
the keys a collector sees are exactly the documented ones. The JSON itself is python-json-logger's
(its encoder also turns values that are not JSON, a Path or an exception, into text).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

LOG_FORMATS = ("text", "json")
# the extra keys a record may carry, in the order a JSON line gives them (docs/operations.md)
FIELDS = ("game_id", "game", "tournament", "attempt", "bot", "seat", "failure_kind", "job_id", "reason")
FieldsFrom = Callable[[logging.LogRecord], Mapping[str, Any]]

_format = "text"  # what configure() set up last: arena/web/serve.py gives uvicorn the same
_handler: logging.Handler | None = None  # the root handler configure() added last


def add_log_format_arg(parser: argparse.ArgumentParser) -> None:
    """``--log-format {text,json}`` on a command's top-level parser (before the sub-command, like -v)."""
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                        help="log records on stderr as readable lines (text, the default) or one JSON object "
                             "per line (json; docs/operations.md)")


class JsonFormatter(_LibraryJsonFormatter):
    """One JSON object per record: time, level, logger, message, FIELDS it carries, exc_info."""

    def __init__(self, fields_from: Iterable[FieldsFrom] = ()) -> None:
        super().__init__()
        self.fields_from = tuple(fields_from)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        log_data["time"] = iso_utc(record.created)
        log_data["level"] = record.levelname.lower()
        log_data["logger"] = record.name
        log_data["message"] = record.message  # format() has just set it from msg % args
        found: dict[str, Any] = {}
        for extract in self.fields_from:  # another library's extras, as FIELDS (never over the record's own)
            try:
                found.update({k: v for k, v in extract(record).items() if k in FIELDS})
            except Exception:  # a log line must never fail for want of an optional field
                pass
        found.update({key: record.__dict__[key] for key in FIELDS if key in record.__dict__})
        log_data.update({key: found[key] for key in FIELDS if key in found})
        if "exc_info" in message_dict:  # the formatted traceback (format() put it there)
            log_data["exc_info"] = message_dict["exc_info"]
        if "stack_info" in message_dict:
            log_data["stack_info"] = message_dict["stack_info"]


def iso_utc(timestamp: float) -> str:
    """A record's time as ISO-8601 in UTC, to the millisecond: ``2026-05-01T12:00:00.123Z``."""
    moment = datetime.fromtimestamp(timestamp, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def make_formatter(log_format: str, text_format: str, fields_from: Iterable[FieldsFrom] = ()) -> logging.Formatter:
    """The formatter of ``log_format``: ``text_format`` (a %-style format) for text, else JsonFormatter."""
    if log_format == "json":
        return JsonFormatter(fields_from)
    if log_format != "text":
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    return logging.Formatter(text_format)


def configure(log_format: str, level: int, text_format: str, fields_from: Iterable[FieldsFrom] = ()) -> None:
    """Send the root logger's records at ``level`` and above to stderr in ``log_format``; called
    again (a sub-command with a level of its own), it replaces what it set up before."""
    global _format, _handler
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(make_formatter(log_format, text_format, fields_from))
    root = logging.getLogger()
    if _handler is not None:  # ours from an earlier call; anyone else's (a test's capture) stays
        root.removeHandler(_handler)
    root.addHandler(handler)
    root.setLevel(level)
    _format, _handler = log_format, handler


def configured_format() -> str:
    """The format configure() set up last ("text" if it was never called)."""
    return _format


__all__ = ["FIELDS", "LOG_FORMATS", "JsonFormatter", "add_log_format_arg", "configure", "configured_format",
           "iso_utc", "make_formatter"]
