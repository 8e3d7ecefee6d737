"""What the public sees of a bot: its name and version, never its command, its log or this
server's paths (docs/web.md, "Security model"). The database keeps everything (the operator's
`arena show` prints it); a page passes what it shows of a record, a result or a failure through
here, so a submitted bot's private command stops being public once it plays."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable
from typing import Any

# an absolute path: a slash after nothing word-like (not "1/2", not a URL's host part)
_PATH = re.compile(r"(?<![\w.:/~-])/[\w.@%+=~-]+(?:/[\w.@%+=~-]*)*")
PATH_SHOWN = "…"
COMMAND_SHOWN = "(its command)"
PRIVATE_SEAT_KEYS = ("endpoint", "log")  # how it was started, and where its log is


def public_text(text: str, commands: Iterable[str] = ()) -> str:
    """``text`` with each of ``commands`` (as written, or quoted as Python quotes it) and every
    absolute path left out."""
    for command in sorted({c for c in commands if c}, key=len, reverse=True):
        text = text.replace(repr(command), COMMAND_SHOWN).replace(command, COMMAND_SHOWN)
    return _PATH.sub(PATH_SHOWN, text)


def record_commands(record: dict[str, Any] | None) -> list[str]:
    """The commands (or addresses) a record's seats were reached by."""
    seats = (record or {}).get("seats")
    return [str(s["endpoint"]) for s in seats if isinstance(s, dict) and s.get("endpoint")] \
        if isinstance(seats, list) else []


def public_failures(failures: Any, commands: Iterable[str]) -> Any:
    """A list of failures (records' and results' form) with each reason made public."""
    if not isinstance(failures, list):
        return failures
    commands = list(commands)
    return [dict(f, reason=public_text(str(f["reason"]), commands)) if isinstance(f, dict) and "reason" in f else f
            for f in failures]


def public_result(result: Any, commands: Iterable[str]) -> Any:
    """A stored game result (``Game.result``) as the public sees it."""
    if not isinstance(result, dict):
        return result
    return dict(result, failures=public_failures(result.get("failures"), commands)) if "failures" in result \
        else dict(result)


def public_record(record: dict[str, Any], commands: Iterable[str] = (), own_seats: Collection[int] = (),
                  public_notes: bool = False) -> dict[str, Any]:
    """A referee record as the public sees it: each seat's name, version and archive, without how
    it was reached (its ``endpoint``: a command line with this server's paths) or where its log
    is; failure reasons without commands or paths; of the bots' own errors and notes, those of
    ``own_seats`` (the reader's bots), and the other seats' notes when ``public_notes``."""
    commands = [*commands, *record_commands(record)]
    shown = copy.deepcopy(record)
    seats = shown.get("seats")
    if isinstance(seats, list):
        shown["seats"] = [{k: v for k, v in s.items() if k not in PRIVATE_SEAT_KEYS} if isinstance(s, dict) else s
                          for s in seats]
    # the bots' own errors and notes: those of ``own_seats`` (the reader's bots; an operator's: all),
    # and the others' notes when the tournament makes notes public
    said = shown.pop("bot_reports", None)
    if isinstance(said, list):
        kept = [r if r.get("seat") in own_seats else {k: v for k, v in r.items() if k != "error"}
                for r in said if isinstance(r, dict) and (r.get("seat") in own_seats or public_notes)]
        if kept := [r for r in kept if "note" in r or "error" in r]:
            shown["bot_reports"] = kept
    if "failures" in shown:
        shown["failures"] = public_failures(shown["failures"], commands)
    if isinstance(shown.get("result"), dict):
        shown["result"] = public_result(shown["result"], commands)
    return shown
